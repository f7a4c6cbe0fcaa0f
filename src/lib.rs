//! perfexpert: finds why a parallel program is slow, from its event trace.
//!
//! The library is the product; the `perfexpert` binary is a thin command line over it.
//! See ARCHITECTURE.md for the map of modules and the data that flows between them.

pub mod cli;
pub mod error;
pub mod formats;
pub mod model;

pub use error::{Error, Result};
pub use formats::open;
pub use model::Trace;
