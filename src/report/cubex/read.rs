//! Reading a `.cubex` archive back into a [`Cube`] (ours or Scalasca's/CubeW's): the
//! `anchor.xml` element tree, then each metric's index and data files, as exclusive values.

use super::archive::Archive;
use super::SystemNode;
use super::{err, Cube, CubeCnode, CubeGroup, CubeLocation, CubeMetric, CubeRegion, Rows};
use crate::error::{Place, Result};
use crate::rules::Unit;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A tiny element tree of the anchor.
#[derive(Debug, Default)]
struct Elem {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
    children: Vec<Elem>,
    /// Byte offset in anchor.xml, for messages.
    offset: u64,
}

impl Elem {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    }
    fn child(&self, n: &str) -> Option<&Elem> {
        self.children.iter().find(|c| c.name == n)
    }
    fn child_text(&self, n: &str) -> String {
        self.child(n)
            .map(|c| c.text.trim().to_string())
            .unwrap_or_default()
    }
    fn all<'a>(&'a self, n: &'a str) -> impl Iterator<Item = &'a Elem> + 'a {
        self.children.iter().filter(move |c| c.name == n)
    }
}

fn parse_xml(file: &Path, xml: &str) -> Result<Elem> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    let mut stack: Vec<Elem> = vec![Elem::default()];
    let bad = |pos: u64, what: String| err(file, Place::Byte(pos), what);
    let open = |e: &quick_xml::events::BytesStart, pos: u64| -> Result<Elem> {
        let mut el = Elem {
            name: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
            offset: pos,
            ..Elem::default()
        };
        for a in e.attributes() {
            let a = a.map_err(|x| bad(pos, format!("bad XML attribute: {x}")))?;
            let v = a
                .unescape_value()
                .map_err(|x| bad(pos, format!("bad XML attribute value: {x}")))?;
            el.attrs.push((
                String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                v.into_owned(),
            ));
        }
        Ok(el)
    };
    loop {
        let pos = r.buffer_position();
        let ev = r
            .read_event()
            .map_err(|e| bad(r.error_position(), format!("malformed XML: {e}")))?;
        match ev {
            Event::Start(e) => {
                let el = open(&e, pos)?;
                stack.push(el);
                if stack.len() > 5_000 {
                    return Err(bad(pos, "XML nested too deeply".to_string()));
                }
            }
            Event::Empty(e) => {
                let el = open(&e, pos)?;
                if let Some(top) = stack.last_mut() {
                    top.children.push(el);
                }
            }
            Event::End(_) => {
                let el = stack.pop().filter(|_| !stack.is_empty());
                match (el, stack.last_mut()) {
                    (Some(el), Some(top)) => top.children.push(el),
                    _ => return Err(bad(pos, "unbalanced XML end tag".to_string())),
                }
            }
            Event::Text(t) => {
                let s = t
                    .unescape()
                    .map_err(|x| bad(pos, format!("bad XML text: {x}")))?;
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&s);
                }
            }
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if stack.len() != 1 {
        return Err(bad(
            xml.len() as u64,
            "unexpected end of XML, expected closing tags".to_string(),
        ));
    }
    let mut doc = stack.pop().unwrap_or_default();
    doc.children
        .pop()
        .filter(|c| c.name == "cube")
        .ok_or_else(|| bad(0, "expected a <cube> root element".to_string()))
}

/// The parsed `anchor.xml` of an archive, with the look-ups its readers share: messages
/// name the anchor and the element's byte offset in it.
struct Anchor {
    path: PathBuf,
    cube: Elem,
}

impl Anchor {
    /// The `anchor.xml` member of the archive at `path`, parsed.
    fn parse(path: &Path, archive: &Archive) -> Result<Anchor> {
        let anchor_path = path.join("anchor.xml");
        let anchor = archive.member("anchor.xml").ok_or_else(|| {
            err(
                path,
                Place::File,
                "no anchor.xml member: not a Cube4 archive",
            )
        })?;
        let xml = std::str::from_utf8(anchor).map_err(|e| {
            err(
                &anchor_path,
                Place::Byte(e.valid_up_to() as u64),
                "invalid UTF-8, expected XML text",
            )
        })?;
        let cube = parse_xml(&anchor_path, xml)?;
        Ok(Anchor {
            path: anchor_path,
            cube,
        })
    }

    fn bad(&self, el: &Elem, what: String) -> crate::error::Error {
        err(&self.path, Place::Byte(el.offset), what)
    }

    fn int_attr(&self, el: &Elem, k: &str) -> Result<i64> {
        el.attr(k)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .ok_or_else(|| self.bad(el, format!("<{}> needs an integer attribute {k}", el.name)))
    }

    /// The child `<n>` of `<cube>`.
    fn section(&self, n: &str) -> Result<&Elem> {
        self.cube
            .child(n)
            .ok_or_else(|| self.bad(&self.cube, format!("expected a <{n}> element in <cube>")))
    }

    /// The value of `<attr key="Creator">`, empty if there is none.
    fn creator(&self) -> String {
        self.cube
            .all("attr")
            .find(|a| a.attr("key") == Some("Creator"))
            .and_then(|a| a.attr("value"))
            .unwrap_or("")
            .to_string()
    }
}

/// Where a metric's values are: the id in its file names and the anchor's `<dtype>`.
struct DataFiles {
    id: i64,
    dtype: String,
}

/// The call tree and columns the data files of every metric are laid out by.
struct Shape<'a> {
    cnodes: &'a [CubeCnode],
    /// pycubexr's "wide" enumeration of the cnodes, used for the rows of INCLUSIVE metrics.
    wide: Vec<usize>,
    nloc: usize,
}

impl Cube {
    /// Read a `.cubex` archive (written by perfexpert or by Scalasca/CubeW): the anchor and
    /// every metric's data, as exclusive values along call paths.
    pub fn read(path: &Path) -> Result<Cube> {
        let archive = Archive::read(path)?;
        let anchor = Anchor::parse(path, &archive)?;
        let (metrics, files) = read_metrics(&anchor)?;
        let program = anchor.section("program")?;
        let (regions, region_of_id) = read_regions(&anchor, program)?;
        let cnodes = read_cnodes(&anchor, program, &region_of_id)?;
        let wide = wide_order(&cnodes);
        let (system, groups, locations) = read_system(&anchor)?;
        let shape = Shape {
            cnodes: &cnodes,
            wide,
            nloc: locations.len(),
        };
        let mut values = Vec::with_capacity(metrics.len());
        for (m, files) in metrics.iter().zip(&files) {
            values.push(read_values(path, &archive, &anchor, m, files, &shape)?);
        }
        Ok(Cube {
            creator: anchor.creator(),
            metrics,
            regions,
            cnodes,
            system,
            groups,
            locations,
            values,
        })
    }
}

/// The metrics that hold data, in pre-order of the element tree, with their files.
fn read_metrics(anchor: &Anchor) -> Result<(Vec<CubeMetric>, Vec<DataFiles>)> {
    fn walk_metrics<'a>(
        el: &'a Elem,
        parent: Option<usize>,
        out: &mut Vec<(&'a Elem, Option<usize>)>,
    ) {
        for m in el.all("metric") {
            out.push((m, parent));
            let me = out.len() - 1;
            walk_metrics(m, Some(me), out);
        }
    }
    let mut metrics = Vec::new();
    let mut files: Vec<DataFiles> = Vec::new();
    let mut flat = Vec::new();
    walk_metrics(anchor.section("metrics")?, None, &mut flat);
    for (m, parent) in &flat {
        let unit = match m.child_text("uom").as_str() {
            "sec" => Unit::Sec,
            "bytes" => Unit::Bytes,
            _ => Unit::Occ,
        };
        let kind = m.attr("type").unwrap_or("EXCLUSIVE");
        if kind != "EXCLUSIVE" && kind != "INCLUSIVE" {
            // derived metrics (CubePL) hold no data of their own
            continue;
        }
        let parent = parent.and_then(|p| {
            let pid = anchor.int_attr(flat[p].0, "id").ok()?;
            files.iter().position(|f| f.id == pid)
        });
        metrics.push(CubeMetric {
            id: m.child_text("uniq_name"),
            disp_name: m.child_text("disp_name"),
            unit,
            url: m.child_text("url"),
            descr: m.child_text("descr"),
            parent,
            inclusive: kind == "INCLUSIVE",
        });
        let dtype = m.child_text("dtype").to_ascii_uppercase();
        files.push(DataFiles {
            id: anchor.int_attr(m, "id")?,
            dtype,
        });
    }
    Ok((metrics, files))
}

/// The `<region>`s of `<program>` in document order, and the index of each region id.
fn read_regions(anchor: &Anchor, program: &Elem) -> Result<(Vec<CubeRegion>, HashMap<i64, usize>)> {
    let mut regions = Vec::new();
    let mut region_of_id = HashMap::new();
    for r in program.all("region") {
        region_of_id.insert(anchor.int_attr(r, "id")?, regions.len());
        regions.push(CubeRegion {
            name: r.child_text("name"),
            file: r.attr("mod").unwrap_or("").to_string(),
            begin: anchor.int_attr(r, "begin").unwrap_or(-1),
            end: anchor.int_attr(r, "end").unwrap_or(-1),
            paradigm: r.child_text("paradigm"),
            role: r.child_text("role"),
            descr: r.child_text("descr"),
        });
    }
    Ok((regions, region_of_id))
}

/// The `<cnode>` tree of `<program>` in depth-first pre-order; it must have one root.
fn read_cnodes(
    anchor: &Anchor,
    program: &Elem,
    region_of_id: &HashMap<i64, usize>,
) -> Result<Vec<CubeCnode>> {
    let roots: Vec<&Elem> = program.all("cnode").collect();
    if roots.len() != 1 {
        return Err(anchor.bad(
            program,
            format!("expected exactly one root <cnode>, found {}", roots.len()),
        ));
    }
    let mut cnodes = Vec::new();
    let mut stack = vec![(roots[0], None)];
    while let Some((c, parent)) = stack.pop() {
        let callee = anchor.int_attr(c, "calleeId")?;
        let callee = *region_of_id
            .get(&callee)
            .ok_or_else(|| anchor.bad(c, format!("calleeId {callee} names no <region>")))?;
        cnodes.push(CubeCnode { callee, parent });
        let me = cnodes.len() - 1;
        let kids: Vec<&Elem> = c.all("cnode").collect();
        stack.extend(kids.into_iter().rev().map(|k| (k, Some(me))));
    }
    Ok(cnodes)
}

/// pycubexr's "wide" enumeration of the cnodes, used for the rows of INCLUSIVE metrics.
fn wide_order(cnodes: &[CubeCnode]) -> Vec<usize> {
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); cnodes.len()];
    for (i, c) in cnodes.iter().enumerate() {
        if let Some(p) = c.parent {
            kids[p].push(i);
        }
    }
    let mut wide = vec![0usize];
    let mut st = vec![0usize];
    while let Some(n) = st.pop() {
        wide.extend(kids[n].iter().copied());
        st.extend(kids[n].iter().rev().copied());
    }
    wide
}

/// The system tree of `<system>`: nodes, location groups and locations, the locations in
/// column order (their Ids, which must be 0, 1, … n−1).
#[allow(clippy::type_complexity)]
fn read_system(anchor: &Anchor) -> Result<(Vec<SystemNode>, Vec<CubeGroup>, Vec<CubeLocation>)> {
    fn walk_sys(
        el: &Elem,
        parent: Option<usize>,
        system: &mut Vec<SystemNode>,
        groups: &mut Vec<CubeGroup>,
        locations: &mut Vec<(i64, CubeLocation)>,
    ) {
        for n in el.all("systemtreenode") {
            system.push(SystemNode {
                name: n.child_text("name"),
                class: n.child_text("class"),
                parent,
            });
            let me = system.len() - 1;
            walk_sys(n, Some(me), system, groups, locations);
            for g in n.all("locationgroup") {
                groups.push(CubeGroup {
                    name: g.child_text("name"),
                    rank: g.child_text("rank").parse().unwrap_or(-1),
                    kind: g.child_text("type"),
                    node: me,
                });
                let gi = groups.len() - 1;
                for l in g.all("location") {
                    let id = l.attr("Id").and_then(|v| v.trim().parse().ok());
                    locations.push((
                        id.unwrap_or(-1),
                        CubeLocation {
                            name: l.child_text("name"),
                            rank: l.child_text("rank").parse().unwrap_or(-1),
                            kind: l.child_text("type"),
                            group: gi,
                        },
                    ));
                }
            }
        }
    }
    let system_el = anchor.section("system")?;
    let mut system = Vec::new();
    let mut groups = Vec::new();
    let mut located = Vec::new();
    walk_sys(system_el, None, &mut system, &mut groups, &mut located);
    // the location Ids are the data columns (§8.6)
    located.sort_by_key(|(id, _)| *id);
    if located
        .iter()
        .enumerate()
        .any(|(i, (id, _))| *id != i as i64)
    {
        return Err(anchor.bad(
            system_el,
            "location Ids are not 0, 1, … n−1 (they number the data columns)".to_string(),
        ));
    }
    let locations = located.into_iter().map(|(_, l)| l).collect();
    Ok((system, groups, locations))
}

/// The rows of metric `m` from its `k.index` and `k.data` members, as exclusive values;
/// no rows if the archive has neither file (CubeW leaves out a metric without data).
fn read_values(
    path: &Path,
    archive: &Archive,
    anchor: &Anchor,
    m: &CubeMetric,
    files: &DataFiles,
    shape: &Shape,
) -> Result<Rows> {
    let fid = files.id;
    let ipath = path.join(format!("{fid}.index"));
    let dpath = path.join(format!("{fid}.data"));
    let (index, data) = match (
        archive.member(&format!("{fid}.index")),
        archive.member(&format!("{fid}.data")),
    ) {
        (Some(i), Some(d)) => (i, d),
        // CubeW leaves out the files of a metric without data: zeros everywhere
        (None, None) => return Ok(Rows::default()),
        _ => {
            return Err(err(
                path,
                Place::File,
                format!(
                    "metric {}: one of {fid}.index and {fid}.data is missing",
                    m.id
                ),
            ))
        }
    };
    let rows = index_rows(&ipath, index, m.inclusive, shape)?;
    check_data(&dpath, data, rows.len(), shape.nloc)?;
    let mut v = decode(&anchor.path, m, &files.dtype, data, &rows, shape)?;
    if m.inclusive {
        to_exclusive(&mut v, shape);
    }
    Ok(Rows::from_dense(&v, shape.nloc))
}

/// The cnode of each row of an index file (§8.7): listed (format 1, sparse) or all of them
/// (format 3, dense), in the enumeration of the metric's kind.
fn index_rows(ipath: &Path, index: &[u8], inclusive: bool, shape: &Shape) -> Result<Vec<usize>> {
    if index.len() < 18 || &index[..11] != b"CUBEX.INDEX" {
        return Err(err(ipath, Place::Byte(0), "expected CUBEX.INDEX"));
    }
    if index[11..15] != 1u32.to_le_bytes() {
        return Err(err(
            ipath,
            Place::Byte(11),
            "expected a little-endian index (marker 1)",
        ));
    }
    let ncnode = shape.cnodes.len();
    match index[17] {
        1 => sparse_rows(ipath, index, inclusive, shape),
        3 => Ok(if inclusive {
            shape.wide.clone()
        } else {
            (0..ncnode).collect()
        }),
        f => Err(err(
            ipath,
            Place::Byte(17),
            format!("index format {f} is not supported (expected 1 sparse or 3 dense)"),
        )),
    }
}

/// The rows listed by a sparse index (format 1).
fn sparse_rows(ipath: &Path, index: &[u8], inclusive: bool, shape: &Shape) -> Result<Vec<usize>> {
    let ncnode = shape.cnodes.len();
    // CubeLib's remapper ends an index without rows right after the format
    let n = match index.get(18..22) {
        None if index.len() == 18 => 0,
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
        None => return Err(err(ipath, Place::Byte(18), "expected the row count")),
    };
    let list = match n {
        0 => &[][..],
        _ => index.get(22..22 + 4 * n).ok_or_else(|| {
            err(
                ipath,
                Place::Byte(index.len() as u64),
                format!("unexpected end of data, expected {n} cnode numbers"),
            )
        })?,
    };
    let all: Vec<usize>;
    let enumeration = if inclusive {
        &shape.wide
    } else {
        all = (0..ncnode).collect();
        &all
    };
    let mut rows = Vec::with_capacity(n);
    for (i, b) in list.chunks_exact(4).enumerate() {
        let t = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        rows.push(*enumeration.get(t).ok_or_else(|| {
            err(
                ipath,
                Place::Byte(22 + 4 * i as u64),
                format!("cnode number {t} out of range (the anchor has {ncnode})"),
            )
        })?);
    }
    Ok(rows)
}

/// A data file must be uncompressed `CUBEX.DATA` with `nrows` rows of `nloc` values.
fn check_data(dpath: &Path, data: &[u8], nrows: usize, nloc: usize) -> Result<()> {
    if data.starts_with(b"ZCUBEX.DATA") {
        return Err(err(
            dpath,
            Place::Byte(0),
            "compressed Cube data (ZCUBEX) is not supported",
        ));
    }
    if data.len() < 10 || &data[..10] != b"CUBEX.DATA" {
        return Err(err(dpath, Place::Byte(0), "expected CUBEX.DATA"));
    }
    let want = 10 + 8 * nrows * nloc;
    if data.len() != want {
        return Err(err(
            dpath,
            Place::Byte(data.len() as u64),
            format!(
                "expected {want} bytes ({nrows} rows of {nloc} 8-byte values), found {}",
                data.len()
            ),
        ));
    }
    Ok(())
}

/// The dense values (`ncnode × nloc`) of a checked data file, decoded as its `dtype` says.
fn decode(
    anchor_path: &Path,
    m: &CubeMetric,
    dtype: &str,
    data: &[u8],
    rows: &[usize],
    shape: &Shape,
) -> Result<Vec<f64>> {
    let nloc = shape.nloc;
    let mut v = vec![0.0; shape.cnodes.len() * nloc];
    for (r, &c) in rows.iter().enumerate() {
        for j in 0..nloc {
            let at = 10 + 8 * (r * nloc + j);
            let mut b = [0u8; 8];
            b.copy_from_slice(&data[at..at + 8]);
            v[c * nloc + j] = match dtype {
                "FLOAT" | "DOUBLE" => f64::from_le_bytes(b),
                "UINT64" => u64::from_le_bytes(b) as f64,
                "INTEGER" | "INT64" => i64::from_le_bytes(b) as f64,
                other => {
                    return Err(err(
                        anchor_path,
                        Place::File,
                        format!("metric {}: dtype {other} is not supported", m.id),
                    ))
                }
            };
        }
    }
    Ok(v)
}

/// Inclusive values along call paths to exclusive: subtract the children's inclusive values.
fn to_exclusive(v: &mut [f64], shape: &Shape) {
    let nloc = shape.nloc;
    let incl = v.to_vec();
    for (c, node) in shape.cnodes.iter().enumerate() {
        if let Some(p) = node.parent {
            for j in 0..nloc {
                v[p * nloc + j] -= incl[c * nloc + j];
            }
        }
    }
}
