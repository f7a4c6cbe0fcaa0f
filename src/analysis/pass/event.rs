//! The event pass's trigger (`on = "event"`): event `i` of location `l` in slot `E`.

use crate::rules::compile::Value;

/// The bindings of event `i` of location `l` as a trigger: `E`.
#[inline(always)]
pub(crate) fn bind(l: usize, i: usize) -> [Value; 4] {
    [
        Value::Event(l as u32, i as u32),
        Value::None,
        Value::None,
        Value::None,
    ]
}
