//! Vector-set commands against the engine: replies, errors, and recall of the
//! approximate search against exact ranking.
