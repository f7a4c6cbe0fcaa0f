//! Rules fed by other rules' instances and queue consumers: handing a stored instance on
//! (`feed`), a consumer's turn at a trigger (`consume`), and closing groups (`flush_groups`).

use crate::analysis::eval::{ptr, Ptr};
use crate::analysis::fire::{Engine, Frame};
use crate::analysis::pass::location::LocPass;
use crate::rules::compile::Value;
use std::collections::VecDeque;

impl Engine<'_> {
    /// Hand a stored instance of rule `k` (its `at` and `value` set in `env`) to the rules
    /// fed by it and to the queues of the rules that consume it.
    #[inline(never)]
    pub(crate) fn feed(&self, k: usize, env: &[Value], pass: &mut LocPass, fr: Frame) {
        let mut e2 = Vec::new();
        for &f in &self.plan.fed[k] {
            e2.clear();
            e2.extend_from_slice(env);
            e2.resize(self.plan.rs.rules[f].slots as usize, Value::None);
            self.fire(f, &mut e2, pass, fr);
        }
        for &q in &self.plan.queued[k] {
            let Some(queue) = self.plan.rs.rules[q].queue.as_ref() else {
                continue;
            };
            let qu = &mut pass.queues[q];
            let (keys, ext) = &mut pass.keys[q];
            // the oldest instance leaves a full queue (its buffer takes the new one)
            let mut item = Vec::new();
            if qu.len() >= queue.size {
                item = qu.pop_front().unwrap_or_default();
                // the extreme may have left: found again when needed
                if keys.pop_front().is_some_and(|k| Some(k) == *ext) {
                    *ext = None;
                }
            }
            item.clear();
            item.extend_from_slice(env);
            qu.push_back(item);
            if let Some(b) = &self.plan.code[q].bound {
                let none = |_: u16| 0.0;
                let item = std::slice::from_ref(&qu[qu.len() - 1]);
                let key = b.key_of(&self.ctx(&[], &[], item, fr.had, &none), queue.slot);
                keys.push_back(key);
                if let Some(m) = ext {
                    if !key.is_nan() && (b.wants_max() && key > *m || !b.wants_max() && key < *m) {
                        *m = key;
                    }
                }
            }
        }
    }

    /// Give queue consumer `k` its chance at the current trigger (e.g. wrong-order late
    /// sender): every queued instance for which `take` holds moves to `taken` (where
    /// `Value::Item` finds it from then on) and fires the consumer.
    #[inline(never)]
    pub(crate) fn consume(
        &self,
        k: usize,
        env: &[Value],
        pass: &mut LocPass,
        taken: &mut Vec<Vec<Value>>,
        had: &[Vec<(u32, u32)>],
    ) {
        let rule = &self.plan.rs.rules[k];
        let (Some(q), Some(take)) = (&rule.queue, &self.plan.code[k].take) else {
            return;
        };
        if pass.queues[k].is_empty() {
            return;
        }
        let none = |_: u16| 0.0;
        // one environment for every trial: `take` writes nothing (no members to aggregate
        // over here), only the item's slot changes; its buffer is the pass's, reused from
        // trigger to trigger
        let n = rule.slots as usize;
        let mut e = std::mem::take(&mut pass.scratch);
        e.clear();
        e.extend_from_slice(env);
        e.resize(n + self.plan.code[k].hoisted.len(), Value::None);
        // the parts of `take` that do not read the queued instance, once per trigger
        let bound = {
            let ctx = self.ctx(&[], &[], taken, had, &none);
            for (s, c) in &self.plan.code[k].hoisted {
                e[*s as usize] = c.run(&ctx, &mut e);
            }
            self.plan.code[k]
                .bound
                .as_ref()
                .map(|b| (b, b.bound.run(&ctx, &mut e)))
        };
        if let Some((b, y)) = bound {
            // no instance can be taken when the extreme key fails the bound
            let (keys, ext) = &mut pass.keys[k];
            let m = *ext.get_or_insert_with(|| {
                let valid = keys.iter().copied().filter(|k| !k.is_nan());
                if b.wants_max() {
                    valid.fold(f64::NEG_INFINITY, f64::max)
                } else {
                    valid.fold(f64::INFINITY, f64::min)
                }
            });
            if y == Value::None || !b.passes(m, y.num()) {
                pass.scratch = e;
                return;
            }
        }
        let items = std::mem::take(&mut pass.queues[k]);
        let mut keep = VecDeque::with_capacity(items.len());
        let mut fire = Vec::new();
        let mut keys = std::mem::take(&mut pass.keys[k].0);
        let mut kept_keys = VecDeque::new();
        for item in items {
            // on trial at the end of `taken`; it stays there if taken
            taken.push(item);
            e[q.slot as usize] = Value::Item(taken.len() as u32 - 1);
            let ctx = self.ctx(&[], &[], taken, had, &none);
            let key = keys.pop_front();
            if take.truth(&ctx, &mut e) {
                fire.push(e[..n].to_vec());
            } else if let Some(item) = taken.pop() {
                keep.push_back(item);
                kept_keys.extend(key);
            }
        }
        pass.queues[k] = keep;
        pass.keys[k] = (kept_keys, None);
        pass.scratch = e;
        for mut e in fire {
            self.fire(k, &mut e, pass, Frame::events(taken, had));
        }
    }

    /// Close the groups whose key call ends at event `i` of the pass's location (or all, at
    /// the end).
    pub(crate) fn flush_groups(&self, i: Option<u32>, pass: &mut LocPass, fr: Frame) {
        let l = pass.loc;
        let mut closing: Vec<(usize, u32)> = pass
            .groups
            .keys()
            .filter(|(_, key)| i.is_none_or(|i| ptr(self.replay, Ptr::Exit, l, *key) == i))
            .copied()
            .collect();
        closing.sort_unstable();
        for key in closing {
            if let Some((sev, mut env, cc)) = pass.groups.remove(&key) {
                if sev > 0.0 {
                    pass.had.push((key.0, l, key.1));
                }
                let none = |_: u16| 0.0;
                let ctx = self.frame_ctx(fr, &none);
                self.emit(
                    key.0,
                    &self.plan.code[key.0],
                    sev,
                    cc,
                    &mut env,
                    pass,
                    &fr,
                    &ctx,
                );
            }
        }
    }
}
