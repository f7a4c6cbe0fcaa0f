//! Writing a [`Cube`] as a `.cubex` archive (patterns.md §8.2–§8.7): the `anchor.xml` text
//! (metric tree, regions and call paths, system tree) and each metric's index and data files.

use super::archive::tar_member;
use super::{Cube, Rows};
use crate::rules::Unit;
use std::fmt::Write as _;
use std::io::Write;

/// Scalasca's online pattern documentation; the Cube GUI replaces `@mirror@` by a mirror.
const MIRROR: &str = "http://apps.fz-juelich.de/scalasca/releases/scalasca/2.6/help/";

impl Cube {
    /// `anchor.xml` (§8.2–§8.6).
    pub fn anchor_xml(&self) -> String {
        let mut s = String::with_capacity(4096 + 300 * (self.regions.len() + self.metrics.len()));
        s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<cube version=\"4.4\">\n");
        let _ = writeln!(
            s,
            "<attr key=\"Creator\" value=\"{}\"/>",
            esc(&self.creator)
        );
        s.push_str("<attr key=\"CUBE_CT_AGGR\" value=\"SUM\"/>\n");
        let _ = writeln!(
            s,
            "<doc>\n<mirrors>\n<murl>{MIRROR}</murl>\n</mirrors>\n</doc>"
        );

        s.push_str("<metrics>\n");
        self.write_metrics(&mut s);
        s.push_str("</metrics>\n<program>\n");
        self.write_program(&mut s);
        s.push_str("</program>\n<system>\n");
        self.write_system(&mut s);
        s.push_str("<topologies>\n</topologies>\n</system>\n</cube>\n");
        s
    }

    /// The `<metric>` elements, nested along the metric tree (§8.3).
    fn write_metrics(&self, s: &mut String) {
        let mut open: Vec<usize> = Vec::new();
        for (i, m) in self.metrics.iter().enumerate() {
            while let Some(&top) = open.last() {
                if Some(top) == m.parent {
                    break;
                }
                open.pop();
                s.push_str("</metric>\n");
            }
            let (dtype, uom) = match m.unit {
                Unit::Sec => ("FLOAT", "sec"),
                Unit::Occ => ("INTEGER", "occ"),
                Unit::Bytes => ("INTEGER", "bytes"),
            };
            let _ = writeln!(
                s,
                "<metric id=\"{i}\" type=\"EXCLUSIVE\">\n<disp_name>{}</disp_name>\n\
                 <uniq_name>{}</uniq_name>\n<dtype>{dtype}</dtype>\n<uom>{uom}</uom>",
                esc(&m.disp_name),
                esc(&m.id)
            );
            // empty elements as Scalasca writes them (`<url></url>`, not `<url/>`): Cube's
            // own reader is a flex/bison scanner, not a general XML parser
            let _ = writeln!(s, "<url>{}</url>", esc(&m.url));
            let _ = writeln!(s, "<descr>{}</descr>", esc(&m.descr));
            open.push(i);
        }
        for _ in open {
            s.push_str("</metric>\n");
        }
    }

    /// The `<region>` elements, then the `<cnode>` elements nested along the call tree
    /// (§8.4–§8.5).
    fn write_program(&self, s: &mut String) {
        for (i, r) in self.regions.iter().enumerate() {
            let _ = writeln!(
                s,
                "<region id=\"{i}\" mod=\"{}\" begin=\"{}\" end=\"{}\">\n<name>{}</name>\n\
                 <mangled_name>{}</mangled_name>\n<paradigm>{}</paradigm>\n<role>{}</role>\n\
                 <url></url>\n<descr>{}</descr>\n</region>",
                esc(&r.file),
                r.begin,
                r.end,
                esc(&r.name),
                esc(&r.name),
                esc(&r.paradigm),
                esc(&r.role),
                esc(&r.descr)
            );
        }
        // cnodes are in pre-order: close the open ones that are not the parent of the next
        let mut open: Vec<usize> = Vec::new();
        for (i, c) in self.cnodes.iter().enumerate() {
            while let Some(&top) = open.last() {
                if Some(top) == c.parent {
                    break;
                }
                open.pop();
                s.push_str("</cnode>\n");
            }
            let _ = writeln!(s, "<cnode id=\"{i}\" calleeId=\"{}\">", c.callee);
            open.push(i);
        }
        for _ in open {
            s.push_str("</cnode>\n");
        }
    }

    /// The `<systemtreenode>` elements with their processes and locations (§8.6).
    fn write_system(&self, s: &mut String) {
        let mut kids: Vec<Vec<usize>> = vec![Vec::new(); self.system.len()];
        let mut roots = Vec::new();
        for (i, n) in self.system.iter().enumerate() {
            match n.parent.filter(|&p| p < self.system.len()) {
                Some(p) => kids[p].push(i),
                None => roots.push(i),
            }
        }
        let mut groups_of: Vec<Vec<usize>> = vec![Vec::new(); self.system.len()];
        for (g, grp) in self.groups.iter().enumerate() {
            if let Some(v) = groups_of.get_mut(grp.node) {
                v.push(g);
            }
        }
        let mut locs_of: Vec<Vec<usize>> = vec![Vec::new(); self.groups.len()];
        for (l, loc) in self.locations.iter().enumerate() {
            if let Some(v) = locs_of.get_mut(loc.group) {
                v.push(l);
            }
        }
        // iterative pre-order: Open(node) writes it and its processes and schedules its
        // children, then Close ends it
        enum Step {
            Open(usize),
            Close,
        }
        let mut stack: Vec<Step> = roots.iter().rev().map(|&r| Step::Open(r)).collect();
        let mut seen = vec![false; self.system.len()];
        while let Some(step) = stack.pop() {
            match step {
                Step::Open(i) => {
                    if std::mem::replace(&mut seen[i], true) {
                        continue; // a cycle in read-back data
                    }
                    let n = &self.system[i];
                    let _ = writeln!(
                        s,
                        "<systemtreenode Id=\"{i}\">\n<name>{}</name>\n<class>{}</class>",
                        esc(&n.name),
                        esc(&n.class)
                    );
                    // its own processes first (so that location Ids run in document
                    // order, §8.6), then the nodes below it
                    for &g in &groups_of[i] {
                        let grp = &self.groups[g];
                        let _ = writeln!(
                            s,
                            "<locationgroup Id=\"{g}\">\n<name>{}</name>\n<rank>{}</rank>\n\
                             <type>{}</type>",
                            esc(&grp.name),
                            grp.rank,
                            esc(&grp.kind)
                        );
                        for &l in &locs_of[g] {
                            let loc = &self.locations[l];
                            let _ = writeln!(
                                s,
                                "<location Id=\"{l}\">\n<name>{}</name>\n<rank>{}</rank>\n\
                                 <type>{}</type>\n</location>",
                                esc(&loc.name),
                                loc.rank,
                                esc(&loc.kind)
                            );
                        }
                        s.push_str("</locationgroup>\n");
                    }
                    stack.push(Step::Close);
                    stack.extend(kids[i].iter().rev().map(|&c| Step::Open(c)));
                }
                Step::Close => {
                    s.push_str("</systemtreenode>\n");
                }
            }
        }
    }

    /// `k.index` and `k.data` of metric `k` (§8.7): the non-zero rows, or one zero row.
    pub fn metric_files(&self, k: usize) -> (Vec<u8>, Vec<u8>) {
        let nloc = self.locations.len();
        let zero = Rows {
            cnodes: vec![0],
            values: vec![0.0; nloc],
        };
        let data_rows = match &self.values[k] {
            r if r.cnodes.is_empty() => &zero,
            r => r,
        };
        let rows = &data_rows.cnodes;
        let mut index = Vec::with_capacity(22 + 4 * rows.len());
        index.extend_from_slice(b"CUBEX.INDEX");
        index.extend_from_slice(&1u32.to_le_bytes());
        index.extend_from_slice(&0u16.to_le_bytes());
        index.push(1);
        index.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        for &c in rows {
            index.extend_from_slice(&(c as u32).to_le_bytes());
        }
        let mut data = Vec::with_capacity(10 + 8 * rows.len() * nloc);
        data.extend_from_slice(b"CUBEX.DATA");
        let float = self.metrics[k].unit == Unit::Sec;
        for &x in &data_rows.values {
            if float {
                data.extend_from_slice(&x.to_le_bytes());
            } else {
                // counts and bytes are integral by construction (§1.1.4)
                data.extend_from_slice(&(x.round() as i64).to_le_bytes());
            }
        }
        (index, data)
    }

    /// The whole archive (§8.1); `mtime` in seconds since the Unix epoch.
    pub fn write(&self, out: &mut dyn Write, mtime: u64) -> std::io::Result<()> {
        tar_member(out, "anchor.xml", self.anchor_xml().as_bytes(), mtime)?;
        for k in 0..self.metrics.len() {
            let (index, data) = self.metric_files(k);
            tar_member(out, &format!("{k}.index"), &index, mtime)?;
            tar_member(out, &format!("{k}.data"), &data, mtime)?;
        }
        out.write_all(&[0u8; 1024])
    }
}

/// `s` as XML text or attribute value: markup characters escaped, control characters that
/// XML 1.0 cannot carry replaced.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // characters XML 1.0 cannot carry at all
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_is_escaped() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
    }
}
