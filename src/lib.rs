//! perfexpert: finds why a parallel program is slow, from its event trace.
//!
//! The library is the product; the `perfexpert` binary is a thin command line over it.
//! See ARCHITECTURE.md for the map of modules and the data that flows between them.
//!
//! ```
//! // Read a Score-P trace shipped in testdata/ and count its events per location.
//! let trace = perfexpert::open("testdata/scorep/ls/traces.otf2".as_ref())?;
//! assert_eq!(trace.event_count(), 92);
//! let per_location: Vec<usize> = trace.events.iter().map(|e| e.len()).collect();
//! assert_eq!(per_location, [23, 23, 23, 23]); // as otf2-print counts them
//! # Ok::<(), perfexpert::Error>(())
//! ```

pub mod analysis;
pub mod cli;
pub mod compare;
pub mod convert;
pub mod distributed;
pub mod error;
pub mod formats;
pub mod huge_alloc;
pub mod model;
pub mod replay;
pub mod report;
pub mod rules;

pub use analysis::pipeline::analyse_trace;
pub use error::{Error, Result};
pub use formats::open;
pub use model::Trace;
