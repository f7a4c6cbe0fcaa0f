//! The root-cause side of the pattern language (docs/rules.md, "Wait states with a cause"):
//! the `[cause]` table of a wait-state rule (who the wait waited for: the partner event of a
//! point-to-point wait, the shape of a collective), and the root-cause metric files
//! (`kind = "sum" | "delay" | "wait_cause" | "critical_path"`) that name what the engine's
//! delay analysis computes for such rules, parsed and checked with `file:line:col` errors.

use super::compile::{Expr, Type};
use super::{expr_offset, remote_event, rule_error, MetricInfo, RuleExprs, Source, Trigger, Unit};
use crate::error::Result;
use serde::Deserialize;
use toml::Spanned;

/// The dependency shape of a collective wait state: who waits for whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// Every member waits for the last one to enter.
    Barrier,
    /// The members that exchange data wait for the last one to enter (N x N).
    AllToAll,
    /// The receivers wait for the root (1-to-N).
    OneToAll,
    /// The root waits for the last sender (N-to-1).
    AllToOne,
    /// The threads of a team wait at a barrier for the last thread to enter it.
    ThreadBarrier,
    /// The worker threads of a process idle until its master thread forks the next team.
    ThreadFork,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::Barrier => "barrier",
            Shape::AllToAll => "all_to_all",
            Shape::OneToAll => "one_to_all",
            Shape::AllToOne => "all_to_one",
            Shape::ThreadBarrier => "thread_barrier",
            Shape::ThreadFork => "thread_fork",
        }
    }
}

/// A rule's `[cause]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CauseSpec {
    partner: Option<Spanned<String>>,
    shape: Option<Spanned<Shape>>,
}

/// A compiled `[cause]`: the rule's instances are wait states caused by another process.
#[derive(Clone, Debug)]
pub enum Cause {
    /// A point-to-point wait: the event of the other process the wait waited for (the send
    /// of a receive rule, the receive's posting of a send rule), evaluated per instance.
    Partner(Expr),
    /// A collective wait state of this shape, on every instance the rule's `when` accepts
    /// (also the thread shapes: a thread barrier's instances, idle worker threads).
    Collective(Shape),
}

/// The rule's `[cause]`, compiled in the rule's scope (after `at`, the rule's compiled `at`);
/// `root` is the trigger of the rule's pass and `remote` the bindings of the other location.
pub(super) fn compile_cause(
    x: &mut RuleExprs,
    root: Trigger,
    remote: &[u16],
    at_expr: Option<&Expr>,
) -> Result<Option<Cause>> {
    let (rf, src) = (x.rf, x.src);
    let Some(c) = &rf.cause else {
        return Ok(None);
    };
    let at = c.span().start;
    let on = rf.on;
    let fed = if on == Trigger::Rule {
        format!(" fed by rules with on = \"{}\"", root.name())
    } else {
        String::new()
    };
    let c = c.get_ref();
    match root {
        Trigger::Receive | Trigger::Send => {
            if let Some(s) = &c.shape {
                return Err(rule_error(
                    src,
                    s.span().start,
                    format!(
                        "`shape` is for collective wait states; a rule with on = \"{}\"{fed} \
                         names its partner event: partner = \"{}\"",
                        on.name(),
                        if root == Trigger::Receive { "S" } else { "Q" }
                    ),
                ));
            }
            let Some(p) = &c.partner else {
                return Err(rule_error(
                    src,
                    at,
                    format!(
                        "`[cause]` of a rule with on = \"{}\"{fed} needs `partner`, the event \
                         the wait waited for (like {})",
                        on.name(),
                        if root == Trigger::Receive { "S" } else { "Q" }
                    ),
                ));
            };
            if let (Some(a), Some(s)) = (at_expr, &rf.at) {
                if remote_event(a, remote) {
                    return Err(rule_error(
                        src,
                        expr_offset(src, s, 0),
                        "a wait state with a [cause] is booked where it waited: `at` must be \
                         an event of the location the rule runs on (like R of a receive, C of \
                         a send)",
                    ));
                }
            }
            let e = x.expr(p, Type::Event)?;
            if !remote_event(&e, remote) {
                return Err(rule_error(
                    src,
                    expr_offset(src, p, 0),
                    "`[cause] partner` must be an event of the other process: a binding of \
                     the partner (S of a receive; R or Q of a send) or its enter or leave",
                ));
            }
            Ok(Some(Cause::Partner(e)))
        }
        Trigger::Collective | Trigger::ThreadBarrier | Trigger::Callpath if on == root => {
            // the shapes a rule of this trigger may declare
            let fits: &[Shape] = match root {
                Trigger::Collective => &[
                    Shape::Barrier,
                    Shape::AllToAll,
                    Shape::OneToAll,
                    Shape::AllToOne,
                ],
                Trigger::ThreadBarrier => &[Shape::ThreadBarrier],
                _ => &[Shape::ThreadFork],
            };
            let names: Vec<&str> = fits.iter().map(|s| s.name()).collect();
            let list = match names.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                _ => names.join(""),
            };
            if let Some(p) = &c.partner {
                return Err(rule_error(
                    src,
                    p.span().start,
                    format!(
                        "`partner` is for point-to-point wait states; a rule with on = \
                         \"{}\" names the shape: {list}",
                        on.name()
                    ),
                ));
            }
            let Some(s) = &c.shape else {
                return Err(rule_error(
                    src,
                    at,
                    format!(
                        "`[cause]` of a rule with on = \"{}\" needs `shape`: {list}",
                        on.name()
                    ),
                ));
            };
            if !fits.contains(s.get_ref()) {
                return Err(rule_error(
                    src,
                    s.span().start,
                    format!(
                        "shape = \"{}\" does not fit a rule with on = \"{}\": {list}",
                        s.get_ref().name(),
                        on.name()
                    ),
                ));
            }
            Ok(Some(Cause::Collective(*s.get_ref())))
        }
        _ => Err(rule_error(
            src,
            at,
            format!(
                "`[cause]` has no meaning in a rule with on = \"{}\"{fed}: only receive, send, \
                 collective and thread-barrier wait states, idle threads (on = \"callpath\") \
                 and rules fed by receive or send rules have a cause",
                on.name()
            ),
        )),
    }
}

/// What a root-cause metric file declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Sum,
    Delay,
    WaitCause,
    CriticalPath,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sum => "sum",
            Kind::Delay => "delay",
            Kind::WaitCause => "wait_cause",
            Kind::CriticalPath => "critical_path",
        }
    }
}

/// Short-term (the wait it directly caused) or long-term (through waits it propagated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Term {
    Short,
    Long,
}

/// Which part of a point-to-point wait state's waiting time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Caused by waits the partner propagated.
    Indirect,
    /// The rest: caused by the partner's own excess time.
    Direct,
    /// The share that caused further waits.
    Propagating,
    /// The rest.
    Terminal,
}

/// A quantity of Scalasca's critical-path analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    Path,
    Activities,
    Imbalance,
    InterPartition,
    NonCritical,
}

/// A root-cause metric file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RcFile {
    pub(super) id: Spanned<String>,
    name: String,
    long_name: Option<String>,
    parent: Option<Spanned<String>>,
    unit: Spanned<Unit>,
    paradigm: Option<String>,
    #[serde(default = "super::default_order")]
    order: i64,
    description: String,
    diagnosis: Option<String>,
    kind: Spanned<Kind>,
    of: Option<Spanned<String>>,
    term: Option<Spanned<Term>>,
    part: Option<Spanned<Part>>,
    quantity: Option<Spanned<Quantity>>,
}

/// What a root-cause metric is, with the wait-state rule (an index into the rule set) it
/// explains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcWhat {
    /// The sum of its children.
    Sum,
    Delay {
        of: u16,
        term: Term,
    },
    WaitCause {
        of: u16,
        part: Part,
    },
    CriticalPath(Quantity),
}

/// A root-cause metric: its metadata and what it is.
#[derive(Clone, Debug)]
pub struct RcMetric {
    pub info: MetricInfo,
    pub what: RcWhat,
}

/// Whether the text is a root-cause metric file (it has a top-level `kind`).
pub(super) fn is_rc_file(text: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        kind: Option<toml::Value>,
    }
    toml::from_str::<Probe>(text).is_ok_and(|p| p.kind.is_some())
}

/// The rule set's view that root-cause metric files are checked against: each rule's id,
/// and its `[cause]` if it has one.
pub(super) struct Rules<'a> {
    pub(super) ids: &'a [String],
    pub(super) causes: Vec<Option<&'a Cause>>,
}

/// Check and compile the root-cause metric files; the result is in the metric tree's
/// depth-first order (siblings by `order`, then by load order).
pub(super) fn compile_rc(
    files: &[(RcFile, usize)],
    sources: &[Source],
    rules: &Rules,
) -> Result<Vec<RcMetric>> {
    let ids: Vec<&str> = files.iter().map(|(f, _)| f.id.get_ref().as_str()).collect();
    let mut out: Vec<RcMetric> = Vec::with_capacity(files.len());
    for (f, k) in files {
        let src = &sources[*k];
        if let Some(p) = &f.parent {
            if !ids.contains(&p.get_ref().as_str()) {
                let why = if rules.ids.contains(p.get_ref()) {
                    "is a rule's metric: a root-cause metric's parent is a root-cause metric \
                     (a file with `kind`)"
                } else {
                    "does not exist"
                };
                return Err(rule_error(
                    src,
                    p.span().start,
                    format!("parent metric `{}` {why}", p.get_ref()),
                ));
            }
        }
        if *f.unit.get_ref() != Unit::Sec {
            return Err(rule_error(
                src,
                f.unit.span().start,
                "root-cause metrics are times: unit = \"sec\"",
            ));
        }
        out.push(RcMetric {
            info: info(f, src),
            what: what(f, src, rules)?,
        });
    }
    preorder(files, sources, out)
}

/// The metric as reports show it.
fn info(f: &RcFile, src: &Source) -> MetricInfo {
    let one = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    MetricInfo {
        id: f.id.get_ref().clone(),
        name: f.name.clone(),
        long_name: f.long_name.clone().unwrap_or_else(|| f.name.clone()),
        parent: f.parent.as_ref().map(|p| p.get_ref().clone()),
        unit: *f.unit.get_ref(),
        paradigm: f.paradigm.clone(),
        order: f.order,
        description: one(&f.description),
        diagnosis: one(f.diagnosis.as_deref().unwrap_or("")),
        source: src.path.clone(),
    }
}

/// The keys of a root-cause file checked for its `kind`: each present key must be one the
/// kind reads, each key it reads must be present.
fn what(f: &RcFile, src: &Source, rules: &Rules) -> Result<RcWhat> {
    let kind = *f.kind.get_ref();
    let keys: [(&str, Option<usize>, bool); 4] = [
        (
            "of",
            f.of.as_ref().map(|x| x.span().start),
            matches!(kind, Kind::Delay | Kind::WaitCause),
        ),
        (
            "term",
            f.term.as_ref().map(|x| x.span().start),
            kind == Kind::Delay,
        ),
        (
            "part",
            f.part.as_ref().map(|x| x.span().start),
            kind == Kind::WaitCause,
        ),
        (
            "quantity",
            f.quantity.as_ref().map(|x| x.span().start),
            kind == Kind::CriticalPath,
        ),
    ];
    let kind_name = kind.name();
    if let Some((key, off, _)) = (keys.iter())
        .filter(|(_, off, used)| off.is_some() && !used)
        .min_by_key(|x| x.1)
    {
        return Err(rule_error(
            src,
            off.unwrap_or(0),
            format!("`{key}` has no meaning in a root-cause metric with kind = \"{kind_name}\""),
        ));
    }
    if let Some((key, _, _)) = keys.iter().find(|(_, off, used)| *used && off.is_none()) {
        return Err(rule_error(
            src,
            f.kind.span().start,
            format!("a root-cause metric with kind = \"{kind_name}\" needs `{key}`"),
        ));
    }
    let of = || -> Result<u16> {
        let Some(of) = &f.of else { return Ok(0) };
        let Some(i) = rules.ids.iter().position(|x| x == of.get_ref()) else {
            return Err(rule_error(
                src,
                of.span().start,
                format!("rule `{}` does not exist", of.get_ref()),
            ));
        };
        match (rules.causes[i], kind) {
            // a built-in about a rule the user replaced by one without a (fitting) cause
            // loads and finds nothing (docs/rules.md, Limitations)
            _ if src.builtin => Ok(i as u16),
            (None, _) => Err(rule_error(
                src,
                of.span().start,
                format!(
                    "rule `{}` declares no [cause]: only wait states with a cause have delay \
                     costs",
                    of.get_ref()
                ),
            )),
            (Some(Cause::Collective(s)), Kind::WaitCause) => Err(rule_error(
                src,
                of.span().start,
                format!(
                    "rule `{}` is a collective wait state (shape = \"{}\"): kind = \
                     \"wait_cause\" splits point-to-point waits only",
                    of.get_ref(),
                    s.name()
                ),
            )),
            _ => Ok(i as u16),
        }
    };
    Ok(match kind {
        Kind::Sum => RcWhat::Sum,
        Kind::Delay => RcWhat::Delay {
            of: of()?,
            term: *f.term.as_ref().map_or(&Term::Short, |t| t.get_ref()),
        },
        Kind::WaitCause => RcWhat::WaitCause {
            of: of()?,
            part: *f.part.as_ref().map_or(&Part::Direct, |t| t.get_ref()),
        },
        Kind::CriticalPath => {
            RcWhat::CriticalPath(*f.quantity.as_ref().map_or(&Quantity::Path, |t| t.get_ref()))
        }
    })
}

/// The metrics in depth-first order of their tree (roots and siblings by `order`, then by
/// load order); a parent cycle is an error at the first parent on it.
fn preorder(
    files: &[(RcFile, usize)],
    sources: &[Source],
    ms: Vec<RcMetric>,
) -> Result<Vec<RcMetric>> {
    let n = ms.len();
    let children = |p: Option<&str>| -> Vec<usize> {
        let mut c: Vec<usize> = (0..n)
            .filter(|&i| ms[i].info.parent.as_deref() == p)
            .collect();
        c.sort_by_key(|&i| (ms[i].info.order, i));
        c
    };
    let mut order: Vec<usize> = Vec::with_capacity(n);
    let mut stack: Vec<usize> = children(None).into_iter().rev().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(children(Some(ms[i].info.id.as_str())).into_iter().rev());
    }
    if let Some(i) = (0..n).find(|i| !order.contains(i)) {
        let (f, k) = &files[i];
        let off = f.parent.as_ref().map_or(0, |p| p.span().start);
        return Err(rule_error(
            &sources[*k],
            off,
            format!(
                "root-cause metrics are each other's parents in a cycle (`{}`)",
                ms[i].info.id
            ),
        ));
    }
    let mut slots: Vec<Option<RcMetric>> = ms.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
}
