//! Probes: pages a unit's read looks at before it decides what to decode, which may rule
//! the unit (or some of its pages) out: its chunks' dictionary pages (`dictionary_probe`)
//! and the plain values of a needle's column (`plain_probe`).

pub(crate) mod dictionary_probe;
pub(crate) mod plain_probe;
