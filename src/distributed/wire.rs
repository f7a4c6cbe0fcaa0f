//! The byte records processes exchange: little-endian words, read back with bounds checks
//! (a short or malformed record is an error, never a panic).

use crate::replay::calltree::LocalTree;
use crate::replay::LocalPass;

/// Appends words to a record.
#[derive(Clone, Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }

    pub fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }

    /// A byte string: its length (4 bytes), then its bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
}

/// Reads words from a record, failing at its end.
pub struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, at: 0 }
    }

    pub fn is_done(&self) -> bool {
        self.at >= self.b.len()
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let s = self
            .b
            .get(self.at..self.at + N)
            .and_then(|s| <[u8; N]>::try_from(s).ok())
            .ok_or_else(|| format!("exchange record ends at byte {}", self.at))?;
        self.at += N;
        Ok(s)
    }

    pub fn u32(&mut self) -> Result<u32, String> {
        self.take::<4>().map(u32::from_le_bytes)
    }

    pub fn u64(&mut self) -> Result<u64, String> {
        self.take::<8>().map(u64::from_le_bytes)
    }

    /// A byte string `Writer::bytes` wrote.
    pub fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        let s = (self.b.get(self.at..self.at.saturating_add(n)))
            .ok_or_else(|| format!("exchange record ends at byte {}", self.b.len()))?;
        self.at += n;
        Ok(s)
    }
}

/// The pass-A results of a process's locations: per location its index, then per local
/// call path (parent, region, first ENTER, time, visits, repairs): 40 bytes a call path.
pub fn put_passes(w: &mut Writer, passes: &[(u32, &LocalPass)]) {
    for (l, p) in passes {
        w.u32(*l);
        w.u32(p.tree.nodes.len() as u32);
        for (k, &(parent, region)) in p.tree.nodes.iter().enumerate() {
            w.u32(parent);
            w.u32(region);
            for v in [&p.tree.first, &p.time, &p.visits, &p.repairs] {
                w.u64(v.get(k).copied().unwrap_or(0));
            }
        }
    }
}

/// `put_passes` read back.
pub fn get_passes(b: &[u8]) -> Result<Vec<(u32, LocalPass)>, String> {
    let mut r = Reader::new(b);
    let mut out = Vec::new();
    while !r.is_done() {
        let l = r.u32()?;
        let n = r.u32()? as usize;
        let mut nodes = Vec::with_capacity(n.min(b.len() / 40));
        let mut cols: [Vec<u64>; 4] = Default::default();
        for k in 0..n {
            let (parent, region) = (r.u32()?, r.u32()?);
            if parent as usize >= k && parent != crate::replay::calltree::NO_CNODE {
                return Err(format!(
                    "location {l}: call path {k} has parent {parent}, not an earlier one"
                ));
            }
            nodes.push((parent, region));
            for c in cols.iter_mut() {
                c.push(r.u64()?);
            }
        }
        let [first, time, visits, repairs] = cols;
        out.push((
            l,
            LocalPass {
                tree: LocalTree::from_parts(nodes, first),
                time,
                visits,
                repairs,
                ..Default::default()
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_read_back_as_written_and_short_records_fail() {
        let p = LocalPass {
            tree: LocalTree::from_parts(vec![(u32::MAX, 3), (0, 5)], vec![10, 12]),
            time: vec![7, 8],
            visits: vec![1, 2],
            repairs: vec![0, 1],
            ..Default::default()
        };
        let mut w = Writer::default();
        put_passes(&mut w, &[(4, &p), (9, &LocalPass::default())]);
        assert_eq!(w.0.len(), 2 * 8 + 2 * 40);
        let back = get_passes(&w.0).expect("a whole record");
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].0, back[1].0), (4, 9));
        assert_eq!(back[0].1.tree.nodes, p.tree.nodes);
        assert_eq!(back[0].1.tree.first, p.tree.first);
        assert_eq!(
            (&back[0].1.time, &back[0].1.visits, &back[0].1.repairs),
            (&p.time, &p.visits, &p.repairs)
        );
        assert!(get_passes(&w.0[..w.0.len() - 1]).is_err());
    }
}
