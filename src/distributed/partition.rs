//! Which process owns which locations: all locations of one location group (the threads of
//! one traced process) together, groups in order of their first location, cut into P
//! contiguous runs whose largest declared event count is as small as it can be. Depends only
//! on the definitions and P, so every process computes the same partition.

use crate::model::Definitions;

/// The owning rank of every location for a job of `p` processes (`p` ≥ 1).
pub fn owners(defs: &Definitions, p: usize) -> Vec<u32> {
    let n = defs.locations.len();
    // groups in order of their first location; a location without a group is one alone
    let mut group_of = vec![usize::MAX; n];
    let mut weights: Vec<u64> = Vec::new();
    let mut first_of_group = std::collections::HashMap::new();
    for (l, loc) in defs.locations.iter().enumerate() {
        let g = match loc.group {
            Some(g) => *first_of_group.entry(g).or_insert_with(|| {
                weights.push(0);
                weights.len() - 1
            }),
            None => {
                weights.push(0);
                weights.len() - 1
            }
        };
        group_of[l] = g;
        // every location weighs at least 1, so empty ones spread too
        weights[g] += loc.declared_events.unwrap_or(0).max(1);
    }
    let rank_of_group = cut(&weights, p.max(1));
    group_of.iter().map(|&g| rank_of_group[g]).collect()
}

/// This process's share: `keep[l]` for the locations rank `rank` owns.
pub fn share(defs: &Definitions, p: usize, rank: usize) -> Vec<bool> {
    owners(defs, p)
        .into_iter()
        .map(|r| r as usize == rank)
        .collect()
}

/// Cut `w` into at most `p` contiguous runs minimising the largest run's sum (binary
/// search on that bound, each bound checked greedily); the rank of each item.
fn cut(w: &[u64], p: usize) -> Vec<u32> {
    let runs_under = |bound: u64| {
        let (mut runs, mut sum) = (1usize, 0u64);
        for &x in w {
            if sum + x > bound {
                runs += 1;
                sum = 0;
            }
            sum += x;
        }
        runs
    };
    let (mut lo, mut hi) = (w.iter().copied().max().unwrap_or(0), w.iter().sum::<u64>());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if runs_under(mid) <= p {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    // cut at the bound, and wherever the items left are no more than the ranks left (so
    // that more processes hold less)
    let (mut rank, mut sum) = (0u32, 0u64);
    w.iter()
        .enumerate()
        .map(|(i, &x)| {
            let spare = p - 1 - rank as usize;
            if sum > 0 && (sum + x > lo || w.len() - i <= spare) {
                rank += 1;
                sum = 0;
            }
            sum += x;
            rank
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Location, LocationKind};

    fn defs(groups: &[(Option<usize>, u64)]) -> Definitions {
        let mut d = Definitions::default();
        for (i, &(group, n)) in groups.iter().enumerate() {
            d.locations.push(Location {
                id: i as u64,
                name: format!("l{i}"),
                kind: LocationKind::CpuThread,
                group,
                declared_events: Some(n),
                rank: None,
            });
        }
        d
    }

    #[test]
    fn threads_of_one_process_stay_together_and_loads_balance() {
        // process 0: locations 0 and 3; process 1: 1; process 2: 2 and 4
        let d = defs(&[
            (Some(0), 10),
            (Some(1), 10),
            (Some(2), 5),
            (Some(0), 10),
            (Some(2), 5),
        ]);
        assert_eq!(owners(&d, 1), vec![0; 5]);
        assert_eq!(owners(&d, 2), vec![0, 1, 1, 0, 1]);
        assert_eq!(owners(&d, 3), vec![0, 1, 2, 0, 2]);
        // more processes than groups: one group each, the extra ones own nothing
        assert_eq!(owners(&d, 5), vec![0, 1, 2, 0, 2]);
        assert_eq!(share(&d, 3, 2), vec![false, false, true, false, true]);
    }

    #[test]
    fn the_largest_share_is_as_small_as_a_contiguous_cut_allows() {
        let w = [7, 2, 3, 4, 5, 1, 8];
        for p in 1..=7 {
            let r = cut(&w, p);
            assert!(r.windows(2).all(|x| x[1] == x[0] || x[1] == x[0] + 1));
            assert!((*r.last().unwrap_or(&0) as usize) < p);
            let mut sums = vec![0u64; p];
            for (x, &k) in w.iter().zip(&r) {
                sums[k as usize] += x;
            }
            let best = [30, 16, 12, 9, 8, 8, 8][p - 1];
            assert_eq!(sums.iter().max(), Some(&best), "p = {p}: {sums:?}");
        }
    }
}
