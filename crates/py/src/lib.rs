//! # tierkit-py
//!
//! The Python module (`import tierkit`), built with PyO3 and maturin by the Python issue;
//! this crate has no code yet.
