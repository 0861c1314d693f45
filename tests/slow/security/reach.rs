//! (filled by the change that builds this family of defences)
