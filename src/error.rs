//! One error type for everything that can go wrong with input: it names the file, the place
//! (byte offset or line) and what was expected, and prints as one line. The binary maps every
//! `Error` to exit status 2.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a file something went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Nowhere in particular (the file as a whole).
    File,
    /// A byte offset from the start of the file.
    Byte(u64),
    /// A 1-based line number.
    Line(u64),
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file is there but its content is not what the format says.
    #[error("{}{}: {what}", .file.display(), place_suffix(.place))]
    Format {
        file: PathBuf,
        place: Place,
        what: String,
    },
    /// The file could not be opened or read.
    #[error("{}: {what}: {source}", .file.display())]
    Io {
        file: PathBuf,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The request itself is wrong (unknown format, unwritable output, ...).
    #[error("{0}")]
    Usage(String),
    /// `--fail-on` thresholds were passed (`diff`, `compare`): one line each; exit status 1.
    #[error("{}", .0.join("; "))]
    Breach(Vec<String>),
}

fn place_suffix(place: &Place) -> String {
    match place {
        Place::File => String::new(),
        Place::Byte(b) => format!(": byte {b}"),
        Place::Line(l) => format!(":{l}"),
    }
}

impl Error {
    pub fn format(file: impl AsRef<Path>, place: Place, what: impl Into<String>) -> Error {
        Error::Format {
            file: file.as_ref().to_path_buf(),
            place,
            what: what.into(),
        }
    }

    pub fn io(file: impl AsRef<Path>, what: &'static str, source: std::io::Error) -> Error {
        Error::Io {
            file: file.as_ref().to_path_buf(),
            what,
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A problem in the input that does not stop the reading but must be reported
/// (for example a location whose declared event count differs from what its file holds).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    pub file: String,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}
