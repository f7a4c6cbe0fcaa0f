//! Overhead classes (SCALEA): each call path's time split into data movement,
//! synchronisation, control of parallelism and unidentified overhead, derived from the metric
//! tree. Which metric belongs to which class is data (`overhead_classes.toml`), not code.

use super::Analysis;
use serde::Serialize;

/// The class table, embedded.
const CLASSES: &str = include_str!("overhead_classes.toml");

#[derive(serde::Deserialize)]
struct Table {
    total: String,
    overhead: Vec<String>,
    classes: std::collections::BTreeMap<String, Vec<String>>,
}

/// The fixed order of the classes in the report.
pub const CLASS_ORDER: [&str; 3] = ["data_movement", "synchronisation", "control_of_parallelism"];

#[derive(Clone, Debug, Serialize)]
pub struct CallpathOverheads {
    pub callpath: u32,
    /// The call path's time (exclusive), summed over locations.
    pub time_s: f64,
    pub data_movement_s: f64,
    pub synchronisation_s: f64,
    pub control_of_parallelism_s: f64,
    pub unidentified_s: f64,
}

/// The `overheads` section.
#[derive(Clone, Debug, Serialize)]
pub struct Overheads {
    /// The metric ids of each class (those present in this analysis).
    pub classes: std::collections::BTreeMap<String, Vec<String>>,
    /// Sums over all call paths.
    pub total: CallpathOverheads,
    /// Call paths with any overhead, in call-path order.
    pub callpaths: Vec<CallpathOverheads>,
}

pub fn overheads(a: &Analysis) -> Overheads {
    // the table is part of the program: a parse error is a build defect caught by the tests
    let table: Table = toml::from_str(CLASSES).unwrap_or(Table {
        total: String::new(),
        overhead: Vec::new(),
        classes: Default::default(),
    });
    let present = |id: &String| {
        a.order
            .iter()
            .copied()
            .find(|&k| &a.rules.rules[k].info.id == id)
    };
    // every listed metric: (rule index, class position or None for `overhead`)
    let mut listed: Vec<(usize, usize)> = Vec::new();
    let mut classes = std::collections::BTreeMap::new();
    for (ci, name) in CLASS_ORDER.iter().enumerate() {
        let ids = table.classes.get(*name).cloned().unwrap_or_default();
        let have: Vec<String> = ids
            .iter()
            .filter(|i| present(i).is_some())
            .cloned()
            .collect();
        for id in &have {
            if let Some(k) = present(id) {
                listed.push((k, ci));
            }
        }
        classes.insert(name.to_string(), have);
    }
    let overhead: Vec<usize> = table.overhead.iter().filter_map(present).collect();
    let total = present(&table.total);
    // the nearest listed ancestor of each listed metric (values are inclusive along the tree)
    let parent_of = |k: usize| -> Option<usize> {
        a.rules.rules[k]
            .info
            .parent
            .as_ref()
            .and_then(|p| a.rules.index_of(p))
    };
    let nearest_listed = |k: usize| -> Option<usize> {
        let mut cur = parent_of(k);
        let mut guard = 0;
        while let Some(p) = cur {
            if listed.iter().any(|x| x.0 == p) || guard > 64 {
                return Some(p);
            }
            cur = parent_of(p);
            guard += 1;
        }
        None
    };
    let anc: Vec<Option<usize>> = listed.iter().map(|&(k, _)| nearest_listed(k)).collect();
    let res_sum = |k: usize, c: u32| -> f64 { (0..a.nloc as u32).map(|l| a.value(k, c, l)).sum() };
    let mut out = Vec::new();
    let mut tot = CallpathOverheads {
        callpath: 0,
        time_s: 0.0,
        data_movement_s: 0.0,
        synchronisation_s: 0.0,
        control_of_parallelism_s: 0.0,
        unidentified_s: 0.0,
    };
    for c in 0..a.ncnode as u32 {
        let mut cls = [0.0f64; 3];
        for (n, &(k, ci)) in listed.iter().enumerate() {
            let v = res_sum(k, c);
            if v == 0.0 {
                continue;
            }
            cls[ci] += v;
            if let Some(p) = anc[n] {
                if let Some(&(_, pci)) = listed.iter().find(|x| x.0 == p) {
                    cls[pci] -= v;
                }
            }
        }
        let ovh: f64 = overhead.iter().map(|&k| res_sum(k, c)).sum();
        // differences of sums leave rounding noise: below a picosecond is zero
        let clean = |x: f64| if x < 1e-12 { 0.0 } else { x };
        let cls = cls.map(clean);
        let unidentified = clean(ovh - cls.iter().sum::<f64>());
        if ovh == 0.0 && cls.iter().all(|&x| x == 0.0) {
            continue;
        }
        let time = total.map_or(0.0, |k| res_sum(k, c));
        let e = CallpathOverheads {
            callpath: c,
            time_s: time,
            data_movement_s: cls[0],
            synchronisation_s: cls[1],
            control_of_parallelism_s: cls[2],
            unidentified_s: unidentified,
        };
        tot.time_s += e.time_s;
        tot.data_movement_s += e.data_movement_s;
        tot.synchronisation_s += e.synchronisation_s;
        tot.control_of_parallelism_s += e.control_of_parallelism_s;
        tot.unidentified_s += e.unidentified_s;
        out.push(e);
    }
    if let Some(k) = total {
        tot.time_s = (0..a.ncnode as u32).map(|c| res_sum(k, c)).sum();
    }
    Overheads {
        classes,
        total: tot,
        callpaths: out,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_class_table_parses_and_names_known_classes() {
        let t: super::Table = toml::from_str(super::CLASSES).unwrap();
        for k in t.classes.keys() {
            assert!(super::CLASS_ORDER.contains(&k.as_str()), "{k}");
        }
        assert_eq!(t.classes.len(), super::CLASS_ORDER.len());
    }
}
