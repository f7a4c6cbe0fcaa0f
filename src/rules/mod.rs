//! The pattern language (docs/rules.md): one TOML file per metric under `rules/`, parsed,
//! type-checked and compiled once. Built-in rules are embedded at build time; `--rules DIR`
//! adds rules or overrides built-ins by id. No Rust code names a pattern.

pub mod causes;
pub mod compile;
pub mod parse;

use crate::error::{Error, Place, Result};
use compile::{Expr, Interner, Scope, Type};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_rules.rs"));
}

/// How many rules are built in (root-cause metric files not counted).
pub fn builtin_count() -> usize {
    (builtin::BUILTIN.iter())
        .filter(|(_, t)| !causes::is_rc_file(t))
        .count()
}

/// Whether `id` is the metric of a built-in rule (files are named `rules/<paradigm>/<id>.toml`).
pub fn is_builtin_id(id: &str) -> bool {
    builtin::BUILTIN
        .iter()
        .any(|(p, _)| Path::new(p).file_stem().is_some_and(|s| s == id))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Sec,
    Occ,
    Bytes,
}

/// The trigger of a rule: which replay situations it is evaluated at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// Each matched receive completion: `R` (the receive), `S` (its send).
    Receive,
    /// Each matched send: `S`, `R`, `C` (its completion), `Q` (the receive's request).
    Send,
    /// Each complete collective instance on a communicator of more than one member.
    Collective,
    /// Each rank's first call of a region class, as one world-wide instance.
    WorldCall,
    /// Each OpenMP team (one parallel-region instance): its threads are the members.
    Team,
    /// Each barrier instance of a team (explicit or implicit): the threads that reached it.
    ThreadBarrier,
    /// Each event of the listed kinds inside an MPI call: `E`.
    Event,
    /// Each (call path, location): `time`, `visits`, `callee`.
    Callpath,
    /// Each instance of another rule (`of`), with that rule's bindings and `value`.
    Rule,
    /// The sum of the child metrics.
    Sum,
    /// A value per (call path, location) from other metrics (`value`, using `metric(id)`).
    Derived,
}

impl Trigger {
    /// The trigger as written in a rule file (`on = "world_call"`).
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Receive => "receive",
            Trigger::Send => "send",
            Trigger::Collective => "collective",
            Trigger::WorldCall => "world_call",
            Trigger::Team => "team",
            Trigger::ThreadBarrier => "thread_barrier",
            Trigger::Event => "event",
            Trigger::Callpath => "callpath",
            Trigger::Rule => "rule",
            Trigger::Sum => "sum",
            Trigger::Derived => "derived",
        }
    }

    /// Whether instances have members (`members`, `m`, per-member bindings, `for`).
    pub fn has_members(self) -> bool {
        matches!(
            self,
            Trigger::Collective | Trigger::WorldCall | Trigger::Team | Trigger::ThreadBarrier
        )
    }

    /// The pass of the engine a rule of this trigger runs in (docs/rules.md, "Evaluation
    /// order"): call paths, then events, receives and sends, then collective and world-call
    /// instances, then sums and derived metrics. `Rule` has no pass of its own: its feeder's.
    fn pass(self) -> u8 {
        match self {
            Trigger::Callpath => 0,
            Trigger::Event => 1,
            Trigger::Receive => 2,
            Trigger::Send => 3,
            Trigger::Collective | Trigger::WorldCall | Trigger::Team | Trigger::ThreadBarrier => 4,
            Trigger::Sum | Trigger::Derived | Trigger::Rule => 5,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupSpec {
    by: Spanned<String>,
    when: Option<Spanned<String>>,
    keep: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueSpec {
    of: Spanned<String>,
    size: usize,
    take: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    id: Spanned<String>,
    name: String,
    long_name: Option<String>,
    parent: Option<Spanned<String>>,
    unit: Unit,
    paradigm: Option<String>,
    #[serde(default = "default_order")]
    order: i64,
    description: String,
    diagnosis: String,
    on: Trigger,
    of: Option<Spanned<String>>,
    class: Option<Spanned<String>>,
    kinds: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(rename = "let")]
    lets: Option<Spanned<Vec<Spanned<String>>>>,
    when: Option<Spanned<String>>,
    #[serde(rename = "for")]
    for_members: Option<Spanned<String>>,
    severity: Option<Spanned<String>>,
    at: Option<Spanned<String>>,
    violation: Option<Spanned<String>>,
    value: Option<Spanned<String>>,
    group: Option<Spanned<GroupSpec>>,
    queue: Option<Spanned<QueueSpec>>,
    cause: Option<Spanned<causes::CauseSpec>>,
}

impl RuleFile {
    /// The rules this one is fed by: its `of` and its `[queue] of`, with their places.
    fn feeders(&self) -> impl Iterator<Item = &Spanned<String>> {
        self.of
            .iter()
            .chain(self.queue.as_ref().map(|q| &q.get_ref().of))
    }

    /// The first key (in file order) that a rule of this trigger never evaluates, with the
    /// offset of its value. `root` is the trigger of the rules that feed an `on = "rule"` rule.
    fn unused_key(&self, root: Trigger) -> Option<(String, usize)> {
        use Trigger::*;
        let on = self.on;
        let has_instances = matches!(
            on,
            Receive | Send | Event | Collective | WorldCall | Team | ThreadBarrier | Rule
        );
        let keys: [(&str, Option<usize>, bool); 12] = [
            ("of", self.of.as_ref().map(|x| x.span().start), on == Rule),
            (
                "class",
                self.class.as_ref().map(|x| x.span().start),
                on == WorldCall,
            ),
            (
                "kinds",
                self.kinds.as_ref().map(|x| x.span().start),
                on == Event,
            ),
            ("let", self.lets.as_ref().map(|x| x.span().start), on != Sum),
            (
                "when",
                self.when.as_ref().map(|x| x.span().start),
                on != Sum,
            ),
            (
                "for",
                self.for_members.as_ref().map(|x| x.span().start),
                matches!(on, Collective | WorldCall | Team | ThreadBarrier),
            ),
            (
                "severity",
                self.severity.as_ref().map(|x| x.span().start),
                has_instances || on == Callpath,
            ),
            (
                "at",
                self.at.as_ref().map(|x| x.span().start),
                has_instances,
            ),
            (
                "violation",
                self.violation.as_ref().map(|x| x.span().start),
                has_instances,
            ),
            (
                "value",
                self.value.as_ref().map(|x| x.span().start),
                on == Derived,
            ),
            (
                "[group]",
                self.group.as_ref().map(|x| x.span().start),
                // (a rule without `of` has no root: "needs `of`" is reported later)
                matches!(on, Receive | Send | Event)
                    || (on == Rule && matches!(root, Receive | Send | Event | Rule)),
            ),
            (
                "[queue]",
                self.queue.as_ref().map(|x| x.span().start),
                matches!(on, Receive | Send | Event),
            ),
        ];
        let (key, off) = keys
            .into_iter()
            .filter(|(_, _, ok)| !ok)
            .filter_map(|(k, off, _)| off.map(|o| (k, o)))
            .min_by_key(|x| x.1)?;
        // `[group]` in a fed rule depends on the pass it runs in: name that pass
        let msg = if key == "[group]" && on == Rule {
            format!(
                "`[group]` has no meaning in a rule with on = \"rule\" fed by rules with on = \"{}\"",
                root.name()
            )
        } else {
            format!(
                "`{key}` has no meaning in a rule with on = \"{}\"",
                on.name()
            )
        };
        Some((msg, off))
    }
}

fn default_order() -> i64 {
    1000
}

/// A rule's metadata (what reports and `rules show` print).
#[derive(Clone, Debug, serde::Serialize)]
pub struct MetricInfo {
    pub id: String,
    pub name: String,
    pub long_name: String,
    pub parent: Option<String>,
    pub unit: Unit,
    pub paradigm: Option<String>,
    pub order: i64,
    pub description: String,
    pub diagnosis: String,
    /// Where the rule came from (`rules/mpi/mpi_latesender.toml` or a user file).
    pub source: String,
}

#[derive(Clone, Debug)]
pub enum Let {
    /// An instance-level binding into a slot.
    Inst(u16, Expr),
    /// A per-member binding into a member-table slot; the member is bound to `var`.
    Member { slot: u16, var: u16, expr: Expr },
}

#[derive(Clone, Debug)]
pub struct Group {
    pub by: Expr,
    pub when: Option<Expr>,
}

#[derive(Clone, Debug)]
pub struct Queue {
    pub of: u16,
    pub size: usize,
    pub take: Expr,
    /// The slot `B` (the queued instance) is bound to.
    pub slot: u16,
}

/// A compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub info: MetricInfo,
    pub on: Trigger,
    pub of: Option<u16>,
    /// The trigger of the pass the rule runs in: `on`, or for `on = "rule"` its feeder's.
    pub root: Trigger,
    pub class: Option<String>,
    pub kinds: Vec<crate::model::EventKind>,
    pub lets: Vec<Let>,
    pub when: Option<Expr>,
    pub for_members: Option<Expr>,
    pub severity: Option<Expr>,
    pub at: Option<Expr>,
    pub violation: Option<Expr>,
    pub value: Option<Expr>,
    pub group: Option<Group>,
    pub queue: Option<Queue>,
    /// Its `[cause]`: its instances are wait states caused by another process.
    pub cause: Option<causes::Cause>,
    /// The slot of `m` in severity/for/at/violation of collective rules.
    pub member_var: Option<u16>,
    /// The slots of `at` and `value` (where and how much, for rules fed by this one).
    pub at_slot: u16,
    pub value_slot: u16,
    /// Slots the environment needs, and per-member slots.
    pub slots: u16,
    pub member_slots: u16,
    /// The rule's bindings (name, type, slot), visible to rules fed by its instances.
    pub vars: Vec<(String, Type, u16)>,
    /// Its per-member bindings (collective rules and rules fed by them): (name, type, slot).
    pub member_vars: Vec<(String, Type, u16)>,
    /// Rules and metrics this rule reads (evaluation order).
    pub uses_rules: Vec<u16>,
    pub uses_metrics: Vec<u16>,
}

/// Every rule, compiled, in evaluation order constraints resolved by the engine.
#[derive(Clone, Debug)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    /// The root-cause metrics (files with `kind`), depth-first in their metric tree.
    pub rc_metrics: Vec<causes::RcMetric>,
    /// Whether the analysis keeps the instances of the rules with a `[cause]` for the root
    /// causes (`Analysis::waits`; true unless the caller computes no root causes).
    pub record_causes: bool,
    pub interner: Interner,
    pub regexes: Vec<regex::Regex>,
}

struct Source {
    path: String,
    text: String,
    /// Embedded in the binary (a user file may replace it), rather than given by the user.
    builtin: bool,
}

/// `file:line:col` of a byte offset in a file's text.
fn line_col(text: &str, offset: usize) -> (u64, u64) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() as u64 + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
    (line, col)
}

fn rule_error(src: &Source, offset: usize, msg: impl std::fmt::Display) -> Error {
    let (line, col) = line_col(&src.text, offset);
    Error::Usage(format!("{}:{line}:{col}: {msg}", src.path))
}

/// The offset in `text` of position `pos` (a byte offset) of the decoded TOML string whose
/// value starts at `start` (its opening delimiter): skips the delimiter and the newline right
/// after a multi-line string's delimiter, and walks the escapes and line-ending backslashes of
/// basic strings and the CRLF line ends that decoding turns into `\n`.
fn raw_offset(text: &str, start: usize, pos: usize) -> usize {
    let Some(raw) = text.get(start..) else {
        return start + pos;
    };
    let (basic, mut r) = if raw.starts_with("\"\"\"") {
        (true, 3)
    } else if raw.starts_with("'''") {
        (false, 3)
    } else if raw.starts_with('"') {
        (true, 1)
    } else if raw.starts_with('\'') {
        (false, 1)
    } else {
        return start + pos;
    };
    let multi = r == 3;
    if multi {
        if raw[r..].starts_with("\r\n") {
            r += 2;
        } else if raw[r..].starts_with('\n') {
            r += 1;
        }
    }
    let hex_len = |h: Option<&str>| {
        h.and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32)
            .map_or(1, char::len_utf8)
    };
    let mut d = 0;
    while d < pos && r < raw.len() {
        let rest = &raw[r..];
        if basic && rest.starts_with('\\') {
            let after = rest[1..].trim_start_matches([' ', '\t']);
            if multi && (after.starts_with('\n') || after.starts_with("\r\n")) {
                // a line-ending backslash: it and all whitespace up to the next character go
                let kept = rest[1..].trim_start_matches([' ', '\t', '\n', '\r']);
                r += rest.len() - kept.len();
                continue;
            }
            let (rl, dl) = match rest.as_bytes().get(1) {
                Some(b'u') => (6, hex_len(rest.get(2..6))),
                Some(b'U') => (10, hex_len(rest.get(2..10))),
                _ => (2, 1),
            };
            r += rl;
            d += dl;
        } else if multi && rest.starts_with("\r\n") {
            r += 2;
            d += 1;
        } else {
            let n = rest.chars().next().map_or(1, char::len_utf8);
            r += n;
            d += n;
        }
    }
    start + r.min(raw.len())
}

/// The offset in the file of position `pos` of expression `s`.
fn expr_offset(src: &Source, s: &Spanned<String>, pos: usize) -> usize {
    raw_offset(&src.text, s.span().start, pos)
}

/// What the checks across rules need to know about each rule before it is compiled.
#[derive(Clone, Copy)]
struct Meta {
    on: Trigger,
    /// The trigger of the pass the rule runs in: its own, or its feeder's for `on = "rule"`.
    root: Trigger,
    has_group: bool,
}

/// The shortest path along `next` from `from` to `to`, both included, if there is one
/// (breadth-first; edges are tried in order, so the result is stable).
fn path_to(
    from: usize,
    to: usize,
    next: &dyn Fn(usize) -> Vec<usize>,
    n: usize,
) -> Option<Vec<usize>> {
    let mut prev = vec![usize::MAX; n];
    let mut seen = vec![false; n];
    let mut queue = std::collections::VecDeque::from([from]);
    seen[from] = true;
    while let Some(x) = queue.pop_front() {
        if x == to {
            let mut path = vec![x];
            let mut y = x;
            while y != from {
                y = prev[y];
                path.push(y);
            }
            path.reverse();
            return Some(path);
        }
        for y in next(x) {
            if !seen[y] {
                seen[y] = true;
                prev[y] = x;
                queue.push_back(y);
            }
        }
    }
    None
}

impl RuleSet {
    /// The built-in rules plus those in `extra` (files or directories); a rule in `extra`
    /// replaces the built-in with the same id.
    pub fn load(extra: &[PathBuf]) -> Result<RuleSet> {
        let mut sources: Vec<Source> = builtin::BUILTIN
            .iter()
            .map(|(p, t)| Source {
                path: p.to_string(),
                text: t.to_string(),
                builtin: true,
            })
            .collect();
        for p in extra {
            let mut files = Vec::new();
            collect_toml(p, &mut files)?;
            for f in files {
                let text =
                    std::fs::read_to_string(&f).map_err(|e| Error::io(&f, "cannot read", e))?;
                sources.push(Source {
                    path: f.display().to_string(),
                    text,
                    builtin: false,
                });
            }
        }
        Self::from_sources(sources)
    }

    /// Check rule files without running them (`perfexpert rules check`).
    pub fn check(files: &[PathBuf]) -> Result<RuleSet> {
        Self::load(files)
    }

    fn from_sources(sources: Vec<Source>) -> Result<RuleSet> {
        let (files, rc_files) = parse_files(&sources)?;
        let p = Parsed::new(&sources, files);
        p.check_references(&rc_files)?;
        p.check_feed_cycles()?;
        let metas = p.metas();
        p.check_passes(&metas)?;
        let mut interner = Interner::default();
        let mut regexes = Vec::new();
        let (rules, metric_calls) = p.compile(&metas, &mut interner, &mut regexes)?;
        p.check_derived_cycles(&rules, &metric_calls)?;
        let view = causes::Rules {
            ids: &p.ids,
            causes: rules.iter().map(|r| r.cause.as_ref()).collect(),
        };
        let rc_metrics = causes::compile_rc(&rc_files, &sources, &view)?;
        Ok(RuleSet {
            rules,
            rc_metrics,
            record_causes: true,
            interner,
            regexes,
        })
    }

    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.rules.iter().position(|r| r.info.id == id)
    }
}

/// A parsed file: a rule or a root-cause metric (a file with `kind`).
enum AnyFile {
    Rule(Box<RuleFile>),
    Rc(Box<causes::RcFile>),
}

impl AnyFile {
    fn id(&self) -> &Spanned<String> {
        match self {
            AnyFile::Rule(r) => &r.id,
            AnyFile::Rc(r) => &r.id,
        }
    }
}

/// Each source's rule file and root-cause metric file, parsed, with the index of its
/// source; a user file with a built-in's id replaces the built-in.
#[allow(clippy::type_complexity)]
fn parse_files(
    sources: &[Source],
) -> Result<(Vec<(RuleFile, usize)>, Vec<(causes::RcFile, usize)>)> {
    let mut parsed: Vec<(AnyFile, usize)> = Vec::new();
    for (k, s) in sources.iter().enumerate() {
        let err = |e: toml::de::Error| {
            let off = e.span().map_or(0, |r| r.start);
            rule_error(s, off, e.message().trim())
        };
        // read as what a line `kind = ...` suggests (one parse for almost every file); when
        // that fails, the file is what its top-level keys say, and its errors are that kind's
        let rc = |t: &str| -> Result<AnyFile> {
            Ok(AnyFile::Rc(Box::new(toml::from_str(t).map_err(err)?)))
        };
        let rule = |t: &str| -> Result<AnyFile> {
            Ok(AnyFile::Rule(Box::new(toml::from_str(t).map_err(err)?)))
        };
        let looks_rc = (s.text.lines())
            .any(|l| (l.strip_prefix("kind")).is_some_and(|r| r.trim_start().starts_with('=')));
        let first = if looks_rc { rc(&s.text) } else { rule(&s.text) };
        let rf = match first {
            Ok(f) => f,
            Err(e) if looks_rc == causes::is_rc_file(&s.text) => return Err(e),
            Err(_) if looks_rc => rule(&s.text)?,
            Err(_) => rc(&s.text)?,
        };
        let id = rf.id().get_ref();
        if !id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            || !id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(rule_error(
                s,
                rf.id().span().start,
                format!("rule id `{id}` must match [a-z][a-z0-9_]*"),
            ));
        }
        // a user file with a built-in's id replaces the built-in
        match parsed.iter().position(|(r, _)| r.id().get_ref() == id) {
            Some(i) if sources[parsed[i].1].builtin && !s.builtin => parsed[i] = (rf, k),
            Some(_) => {
                return Err(rule_error(
                    s,
                    rf.id().span().start,
                    format!("rule `{id}` is defined twice"),
                ))
            }
            None => parsed.push((rf, k)),
        }
    }
    let (mut rules, mut rc) = (Vec::new(), Vec::new());
    for (f, k) in parsed {
        match f {
            AnyFile::Rule(r) => rules.push((*r, k)),
            AnyFile::Rc(r) => rc.push((*r, k)),
        }
    }
    Ok((rules, rc))
}

/// The rule files of a rule set, and what the checks and the compilation look up in them.
struct Parsed<'a> {
    sources: &'a [Source],
    /// Each rule file with the index of its source.
    parsed: Vec<(RuleFile, usize)>,
    ids: Vec<String>,
    /// The rules each rule is fed by (`of`, `[queue] of`), as far as they exist.
    feeders: Vec<Vec<usize>>,
}

impl<'a> Parsed<'a> {
    fn new(sources: &'a [Source], parsed: Vec<(RuleFile, usize)>) -> Parsed<'a> {
        let ids: Vec<String> = parsed.iter().map(|(r, _)| r.id.get_ref().clone()).collect();
        let index = |id: &str| ids.iter().position(|x| x == id);
        let feeders: Vec<Vec<usize>> = parsed
            .iter()
            .map(|(r, _)| r.feeders().filter_map(|f| index(f.get_ref())).collect())
            .collect();
        Parsed {
            sources,
            parsed,
            ids,
            feeders,
        }
    }

    fn index(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|x| x == id)
    }

    /// Parents and feeders must exist (a rule's parent is a rule's metric, not one of the
    /// root-cause metrics `rc`).
    fn check_references(&self, rc: &[(causes::RcFile, usize)]) -> Result<()> {
        let (parsed, sources) = (&self.parsed, self.sources);
        let index = |id: &str| self.index(id);
        for (r, k) in parsed {
            if let Some(p) = &r.parent {
                if index(p.get_ref()).is_none() {
                    let why = if rc.iter().any(|(f, _)| f.id.get_ref() == p.get_ref()) {
                        "is a root-cause metric: a rule's parent is a rule's metric"
                    } else {
                        "does not exist"
                    };
                    return Err(rule_error(
                        &sources[*k],
                        p.span().start,
                        format!("parent metric `{}` {why}", p.get_ref()),
                    ));
                }
            }
            for f in r.feeders() {
                if index(f.get_ref()).is_none() {
                    return Err(rule_error(
                        &sources[*k],
                        f.span().start,
                        format!("rule `{}` does not exist", f.get_ref()),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Rules must not feed each other in a cycle.
    fn check_feed_cycles(&self) -> Result<()> {
        let (parsed, sources, ids, feeders) =
            (&self.parsed, self.sources, &self.ids, &self.feeders);
        let n = parsed.len();
        for (i, (r, k)) in parsed.iter().enumerate() {
            for (f, &fi) in r.feeders().zip(&feeders[i]) {
                if let Some(path) = path_to(fi, i, &|x| feeders[x].clone(), n) {
                    let names: Vec<&str> = std::iter::once(i)
                        .chain(path)
                        .map(|x| ids[x].as_str())
                        .collect();
                    return Err(rule_error(
                        &sources[*k],
                        f.span().start,
                        format!("rules feed each other in a cycle: {}", names.join(" → ")),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The trigger of each rule and of the pass it runs in: an `on = "rule"` rule runs in
    /// its feeder's.
    fn metas(&self) -> Vec<Meta> {
        let (parsed, feeders) = (&self.parsed, &self.feeders);
        let n = parsed.len();
        fn root_of(i: usize, parsed: &[(RuleFile, usize)], feeders: &[Vec<usize>]) -> Trigger {
            match parsed[i].0.on {
                Trigger::Rule if parsed[i].0.of.is_some() => {
                    root_of(feeders[i][0], parsed, feeders)
                }
                on => on,
            }
        }
        (0..n)
            .map(|i| Meta {
                on: parsed[i].0.on,
                root: root_of(i, parsed, feeders),
                has_group: parsed[i].0.group.is_some(),
            })
            .collect()
    }

    /// Keys that the rule's pass does not use, rules that cannot feed others, and queues
    /// of instances from another pass are errors.
    fn check_passes(&self, metas: &[Meta]) -> Result<()> {
        let (parsed, sources, feeders) = (&self.parsed, self.sources, &self.feeders);
        let index = |id: &str| self.index(id);
        for (i, (r, k)) in parsed.iter().enumerate() {
            let src = &sources[*k];
            if let Some((msg, off)) = r.unused_key(metas[i].root) {
                return Err(rule_error(src, off, msg));
            }
            if let (Trigger::Rule, Some(of)) = (r.on, &r.of) {
                let f = metas[feeders[i][0]];
                if matches!(f.on, Trigger::Callpath | Trigger::Sum | Trigger::Derived) {
                    return Err(rule_error(
                        src,
                        of.span().start,
                        format!(
                            "rule `{}` cannot feed other rules: a rule with on = \"{}\" has no \
                             instances",
                            of.get_ref(),
                            f.on.name()
                        ),
                    ));
                }
            }
            if let Some(q) = &r.queue {
                let of = &q.get_ref().of;
                let f = metas[index(of.get_ref()).unwrap_or(0)];
                if f.root != r.on {
                    return Err(rule_error(
                        src,
                        of.span().start,
                        format!(
                            "rule `{}` is evaluated with the on = \"{}\" rules, this rule with \
                             the on = \"{}\" rules: a queue holds instances of its own pass",
                            of.get_ref(),
                            f.root.name(),
                            r.on.name()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every rule compiled, feeders first (their bindings are the types of the rules they
    /// feed), with the metrics each one's expressions call and where.
    #[allow(clippy::type_complexity)]
    fn compile(
        &self,
        metas: &[Meta],
        interner: &mut Interner,
        regexes: &mut Vec<regex::Regex>,
    ) -> Result<(Vec<Rule>, Vec<Vec<(u16, usize)>>)> {
        let (parsed, sources, ids, feeders) =
            (&self.parsed, self.sources, &self.ids, &self.feeders);
        let n = parsed.len();
        // rules whose instances feed others are compiled first (their bindings are types)
        let mut rules: Vec<Option<Rule>> = vec![None; n];
        let mut metric_calls: Vec<Vec<(u16, usize)>> = vec![Vec::new(); n];
        // per rule, its bindings and its per-member bindings, once it is compiled
        let mut item_vars: Vec<Vars> = vec![Vec::new(); n];
        let mut member_vars: Vec<Vars> = vec![Vec::new(); n];
        let mut pending: Vec<usize> = (0..n).collect();
        while !pending.is_empty() {
            let mut still = Vec::new();
            for &i in &pending {
                if feeders[i].iter().any(|&f| rules[f].is_none()) {
                    still.push(i);
                    continue;
                }
                let (rf, k) = &parsed[i];
                let env = Env {
                    ids,
                    metas,
                    me: i,
                    builtin: sources[*k].builtin,
                    item_vars: &item_vars,
                    member_vars: &member_vars,
                };
                let (rule, calls) = compile_rule(rf, &sources[*k], &env, interner, regexes)?;
                item_vars[i] = rule.vars.clone();
                member_vars[i] = rule.member_vars.clone();
                metric_calls[i] = calls;
                rules[i] = Some(rule);
            }
            // there are no cycles (checked above): every round compiles at least one rule
            assert!(
                still.len() < pending.len(),
                "rules feed each other in a cycle"
            );
            pending = still;
        }
        Ok((rules.into_iter().flatten().collect(), metric_calls))
    }

    /// Derived metrics (and the sums between them) must not read each other in a cycle.
    fn check_derived_cycles(
        &self,
        rules: &[Rule],
        metric_calls: &[Vec<(u16, usize)>],
    ) -> Result<()> {
        let (parsed, sources, ids) = (&self.parsed, self.sources, &self.ids);
        let n = parsed.len();
        let reads = |x: usize| -> Vec<usize> {
            match rules[x].on {
                Trigger::Derived => rules[x].uses_metrics.iter().map(|&m| m as usize).collect(),
                Trigger::Sum => (0..n)
                    .filter(|&c| rules[c].info.parent.as_deref() == Some(ids[x].as_str()))
                    .collect(),
                _ => Vec::new(),
            }
        };
        for (i, calls) in metric_calls.iter().enumerate() {
            for &(m, off) in calls {
                if let Some(path) = path_to(m as usize, i, &reads, n) {
                    let names: Vec<&str> = std::iter::once(i)
                        .chain(path)
                        .map(|x| ids[x].as_str())
                        .collect();
                    return Err(rule_error(
                        &sources[parsed[i].1],
                        off,
                        format!(
                            "derived metrics read each other in a cycle: {}",
                            names.join(" → ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn collect_toml(p: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if p.is_dir() {
        let rd = std::fs::read_dir(p).map_err(|e| Error::io(p, "cannot list", e))?;
        let mut v: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        v.sort();
        for x in v {
            if x.is_dir() || x.extension().is_some_and(|e| e == "toml") {
                collect_toml(&x, out)?;
            }
        }
        Ok(())
    } else if p.exists() {
        out.push(p.to_path_buf());
        Ok(())
    } else {
        Err(Error::format(
            p,
            Place::File,
            "no such rule file or directory",
        ))
    }
}

/// Bindings (name, type, slot): what a rule's instances carry to the rules they feed (and,
/// for collective and world-call rules, per member).
type Vars = Vec<(String, Type, u16)>;

/// The other rules, as one rule's compilation sees them.
struct Env<'a> {
    ids: &'a [String],
    metas: &'a [Meta],
    /// The rule being compiled, and whether it is a built-in.
    me: usize,
    builtin: bool,
    /// Per rule compiled so far: its bindings, its per-member bindings.
    item_vars: &'a [Vars],
    member_vars: &'a [Vars],
}

/// "a receive rule", "an event rule", "a rule fed by send rules".
fn rule_kind(m: Meta) -> String {
    if m.on == Trigger::Rule {
        return format!("a rule fed by {} rules", m.root.name());
    }
    let n = m.on.name();
    let article = if n.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {n} rule")
}

/// Why `had(target, ...)` cannot be used in the rule being compiled, if it cannot.
fn had_problem(env: &Env, target: u16) -> Option<String> {
    let t = env.metas[target as usize];
    let me = env.metas[env.me];
    let id = &env.ids[target as usize];
    // a built-in may ask about a rule the user replaced by one without a group: always false
    if !t.has_group && !env.builtin {
        return Some(format!(
            "had('{id}', ...) reads a rule without a [group]: had() asks whether one of its \
             groups kept an instance"
        ));
    }
    let (tp, mp) = (t.root.pass(), me.root.pass());
    if tp < mp || !t.has_group {
        return None;
    }
    let target = if t.on == Trigger::Rule {
        format!("on = \"rule\", fed by on = \"{}\" rules", t.root.name())
    } else {
        format!("on = \"{}\"", t.on.name())
    };
    let earlier: Vec<String> = [Trigger::Event, Trigger::Receive, Trigger::Send]
        .into_iter()
        .filter(|x| x.pass() < mp)
        .map(|x| format!("\"{}\"", x.name()))
        .collect();
    let sees = match earlier.split_last() {
        None => format!("had() sees no rule from {}", rule_kind(me)),
        Some((last, [])) => format!(
            "had() sees only rules with on = {last} from {}",
            rule_kind(me)
        ),
        Some((last, rest)) => format!(
            "had() sees only rules with on = {} or {last} from {}",
            rest.join(", "),
            rule_kind(me)
        ),
    };
    let when = if tp == mp { "the same" } else { "a later" };
    Some(format!(
        "had('{id}', ...) reads a rule evaluated in {when} pass ({target}); {sees}"
    ))
}

/// Whether event expression `e` is, by construction, an event of another location than the
/// one the rule runs on: a remote binding (`S` of a receive, `R` and `Q` of a send) or its
/// `enter` or `leave`.
fn remote_event(e: &Expr, remote: &[u16]) -> bool {
    match e {
        Expr::Slot(s) => remote.contains(s),
        Expr::Field(b, compile::Field::Enter | compile::Field::Leave) => remote_event(b, remote),
        _ => false,
    }
}

fn expr_error(src: &Source, s: &Spanned<String>, e: parse::LangError) -> Error {
    rule_error(src, expr_offset(src, s, e.pos), e.msg)
}

/// Parse and compile expression `s`, checking its type; its `metric()` calls go to `calls`
/// with their places in the file.
fn compile_expr(
    src: &Source,
    s: &Spanned<String>,
    scope: &mut Scope,
    want: Option<Type>,
    calls: &mut Vec<(u16, usize)>,
) -> Result<(Expr, Type)> {
    let ast = parse::parse(s.get_ref()).map_err(|e| expr_error(src, s, e))?;
    let out = compile::compile(&ast, scope, want).map_err(|e| expr_error(src, s, e))?;
    for (m, p) in scope.metric_refs.drain(..) {
        calls.push((m, expr_offset(src, s, p)));
    }
    Ok(out)
}

/// One rule's expressions being compiled: the scope they share and, with their places in
/// the file, the `metric()` calls they make.
struct RuleExprs<'a, 's> {
    src: &'s Source,
    rf: &'s RuleFile,
    scope: Scope<'a>,
    calls: Vec<(u16, usize)>,
}

impl RuleExprs<'_, '_> {
    /// Compile expression `s` of type `want`.
    fn expr(&mut self, s: &Spanned<String>, want: Type) -> Result<Expr> {
        Ok(compile_expr(self.src, s, &mut self.scope, Some(want), &mut self.calls)?.0)
    }

    /// Compile expression `s`, if the rule has it.
    fn opt(&mut self, s: &Option<Spanned<String>>, want: Type) -> Result<Option<Expr>> {
        s.as_ref().map(|s| self.expr(s, want)).transpose()
    }

    /// A rule with this trigger must have key `what`.
    fn need(&self, present: bool, what: &str) -> Result<()> {
        if !present {
            return Err(rule_error(
                self.src,
                0,
                format!("a rule with on = \"{}\" needs `{what}`", self.rf.on.name()),
            ));
        }
        Ok(())
    }
}

/// Compile one rule; also returns its `metric()` calls with their places in the file.
fn compile_rule(
    rf: &RuleFile,
    src: &Source,
    env: &Env,
    interner: &mut Interner,
    regexes: &mut Vec<regex::Regex>,
) -> Result<(Rule, Vec<(u16, usize)>)> {
    let ids = env.ids;
    let meta = env.metas[env.me];
    let collective = rf.on.has_members();
    let had_check = |t: u16| had_problem(env, t);
    let mut x = RuleExprs {
        src,
        rf,
        scope: Scope {
            vars: Vec::new(),
            member_lets: Vec::new(),
            // rules fed by collective instances see the instance's members too
            has_members: meta.root.has_members(),
            item_vars: env.item_vars,
            interner,
            regexes,
            rule_ids: ids,
            metric_ids: ids,
            allow_metric: rf.on == Trigger::Derived,
            had_check: &had_check,
            uses_rules: Vec::new(),
            uses_metrics: Vec::new(),
            metric_refs: Vec::new(),
            slots: 0,
        },
        calls: Vec::new(),
    };
    let (of, remote) = declare_trigger(&mut x, env)?;
    let queue = compile_queue(&mut x, ids)?;
    let (lets, member_slots) = compile_lets(&mut x, collective)?;
    let when = x.opt(&rf.when, Type::Bool)?;
    let group = compile_group(&mut x, meta.root, &remote)?;
    // severity, `for`, `at` and `violation` see the member `m` in collective rules
    let member_slot = if collective {
        Some(x.scope.declare("m", Type::Member))
    } else {
        None
    };
    let for_members = x.opt(&rf.for_members, Type::Bool)?;
    let (severity, at, value) = compile_outputs(&mut x)?;
    let cause = causes::compile_cause(&mut x, meta.root, &remote, at.as_ref())?;
    let violation = x.opt(&rf.violation, Type::Bool)?;
    let kinds = event_kinds(rf, src)?;
    if rf.on == Trigger::Event {
        x.need(!kinds.is_empty(), "kinds")?;
    }
    let RuleExprs {
        mut scope, calls, ..
    } = x;
    // what rules fed by this one see: where it attributed (`at`) and its `value`
    let at_slot = scope.declare("at", Type::Event);
    let value_slot = scope.declare("value", Type::Num);
    let vars = scope.vars.clone();
    let member_vars = scope.member_lets.clone();
    let rule = Rule {
        info: metric_info(rf, src),
        on: rf.on,
        of,
        root: meta.root,
        class: rf.class.as_ref().map(|c| c.get_ref().clone()),
        kinds,
        lets,
        when,
        for_members,
        severity,
        at,
        violation,
        value,
        group,
        queue,
        cause,
        member_var: member_slot,
        at_slot,
        value_slot,
        slots: scope.slots,
        member_slots,
        vars,
        member_vars,
        uses_rules: scope.uses_rules,
        uses_metrics: scope.uses_metrics,
    };
    Ok((rule, calls))
}

/// The bindings of the rule's trigger; for an `on = "rule"` rule, its feeder's. Returns the
/// feeding rule and the bindings of another location than the rule's (a `[group] by` cannot
/// be one of them).
fn declare_trigger(x: &mut RuleExprs, env: &Env) -> Result<(Option<u16>, Vec<u16>)> {
    let rf = x.rf;
    let scope = &mut x.scope;
    let mut of = None;
    let mut remote: Vec<u16> = Vec::new();
    match rf.on {
        Trigger::Receive => {
            scope.declare("R", Type::Event);
            remote.push(scope.declare("S", Type::Event));
        }
        Trigger::Send => {
            for v in ["S", "R", "C", "Q"] {
                let s = scope.declare(v, Type::Event);
                if v == "R" || v == "Q" {
                    remote.push(s);
                }
            }
        }
        Trigger::Collective => {
            scope.declare("op", Type::Str);
            scope.declare("size", Type::Num);
            scope.declare("root", Type::Num);
        }
        Trigger::WorldCall => {
            x.need(rf.class.is_some(), "class")?;
            x.scope.declare("size", Type::Num);
        }
        Trigger::Team => {
            scope.declare("size", Type::Num);
            scope.declare("fork", Type::Num);
            scope.declare("join", Type::Num);
        }
        Trigger::ThreadBarrier => {
            scope.declare("size", Type::Num);
        }
        Trigger::Event => {
            scope.declare("E", Type::Event);
        }
        Trigger::Callpath => {
            scope.declare("time", Type::Num);
            scope.declare("visits", Type::Num);
            scope.declare("callee", Type::Region);
            // §3.5: the process's master thread and the OpenMP subtrees
            scope.declare("master", Type::Bool);
            scope.declare("master_time", Type::Num);
            scope.declare("incl", Type::Num);
            scope.declare("master_incl", Type::Num);
            scope.declare("omp_subtree", Type::Bool);
            scope.declare("omp_root", Type::Bool);
        }
        Trigger::Rule => {
            x.need(rf.of.is_some(), "of")?;
            let fi = rf
                .of
                .as_ref()
                .and_then(|f| env.ids.iter().position(|x| x == f.get_ref()))
                .unwrap_or(0);
            of = Some(fi as u16);
            let scope = &mut x.scope;
            // the feeding rule's bindings, in the same slots, plus its value
            for (n, t, s) in &env.item_vars[fi] {
                scope.vars.push((n.clone(), *t, *s));
                scope.slots = scope.slots.max(s + 1);
            }
            scope.member_lets = env.member_vars[fi].clone();
            // the trigger's bindings keep their slots along a chain of fed rules
            remote = match env.metas[env.me].root {
                Trigger::Receive => vec![1],
                Trigger::Send => vec![1, 3],
                _ => Vec::new(),
            };
        }
        Trigger::Sum | Trigger::Derived => {}
    }
    Ok((of, remote))
}

/// The rule's `[queue]`: the queued instance `B` and the `take` condition.
fn compile_queue(x: &mut RuleExprs, ids: &[String]) -> Result<Option<Queue>> {
    let Some(q) = &x.rf.queue else {
        return Ok(None);
    };
    let q = q.get_ref();
    let qi = ids.iter().position(|x| x == q.of.get_ref()).unwrap_or(0);
    let slot = x.scope.declare("B", Type::Item(qi as u16));
    let take = x.expr(&q.take, Type::Bool)?;
    Ok(Some(Queue {
        of: qi as u16,
        size: q.size,
        take,
        slot,
    }))
}

/// The rule's `let` bindings in order, and how many per-member bindings there are.
fn compile_lets(x: &mut RuleExprs, collective: bool) -> Result<(Vec<Let>, u16)> {
    let (rf, src) = (x.rf, x.src);
    let mut lets = Vec::new();
    let mut member_slots = 0u16;
    for l in rf.lets.iter().flat_map(|l| l.get_ref()) {
        let (mscope, name, _, ast) =
            parse::parse_binding(l.get_ref()).map_err(|e| expr_error(src, l, e))?;
        let compiled = |scope: &mut Scope, calls: &mut Vec<(u16, usize)>| {
            let r = compile::compile(&ast, scope, None).map_err(|e| expr_error(src, l, e));
            for (m, p) in scope.metric_refs.drain(..) {
                calls.push((m, expr_offset(src, l, p)));
            }
            r
        };
        if let Some(ms) = &mscope {
            if !collective {
                return Err(rule_error(
                    src,
                    expr_offset(src, l, 0),
                    format!("`{ms}.{name}`: per-member bindings need a collective trigger"),
                ));
            }
            let m = x.scope.declare(ms, Type::Member);
            let (e, t) = compiled(&mut x.scope, &mut x.calls)?;
            x.scope.vars.retain(|v| v.2 != m);
            x.scope.member_lets.push((name, t, member_slots));
            lets.push(Let::Member {
                slot: member_slots,
                var: m,
                expr: e,
            });
            member_slots += 1;
        } else {
            let (e, t) = compiled(&mut x.scope, &mut x.calls)?;
            let s = x.scope.declare(&name, t);
            lets.push(Let::Inst(s, e));
        }
    }
    Ok((lets, member_slots))
}

/// The rule's `[group]`; its key must be an event of the location the rule runs on (`root`
/// is the trigger of the rule's pass).
fn compile_group(x: &mut RuleExprs, root: Trigger, remote: &[u16]) -> Result<Option<Group>> {
    let (rf, src) = (x.rf, x.src);
    let Some(g) = &rf.group else {
        return Ok(None);
    };
    let g = g.get_ref();
    if g.keep.get_ref() != "max" {
        return Err(rule_error(
            src,
            g.keep.span().start,
            format!(
                "group keep = \"{}\": only \"max\" is supported",
                g.keep.get_ref()
            ),
        ));
    }
    let by = x.expr(&g.by, Type::Event)?;
    if remote_event(&by, remote) {
        let local = match root {
            Trigger::Send => "C.enter",
            Trigger::Event => "E.enter",
            _ => "R.enter",
        };
        return Err(rule_error(
            src,
            expr_offset(src, &g.by, 0),
            format!(
                "`[group] by` is an event of another location: groups are kept per \
                 location, so the key must be an event of the location the rule runs \
                 on, like {local}"
            ),
        ));
    }
    let when = x.opt(&g.when, Type::Bool)?;
    Ok(Some(Group { by, when }))
}

/// What the rule finds: `severity` and `at` (`at` not for `on = "callpath"`), or the
/// `value` of a derived metric; a sum has none of them.
#[allow(clippy::type_complexity)]
fn compile_outputs(x: &mut RuleExprs) -> Result<(Option<Expr>, Option<Expr>, Option<Expr>)> {
    let rf = x.rf;
    let mut severity = None;
    let mut at = None;
    let mut value = None;
    match rf.on {
        Trigger::Sum => {}
        Trigger::Derived => {
            x.need(rf.value.is_some(), "value")?;
            value = x.opt(&rf.value, Type::Num)?;
        }
        _ => {
            x.need(rf.severity.is_some(), "severity")?;
            severity = x.opt(&rf.severity, Type::Num)?;
            if rf.on != Trigger::Callpath {
                x.need(rf.at.is_some(), "at")?;
                at = x.opt(&rf.at, Type::Event)?;
            }
        }
    }
    Ok((severity, at, value))
}

/// The event kinds of the rule's `kinds`.
fn event_kinds(rf: &RuleFile, src: &Source) -> Result<Vec<crate::model::EventKind>> {
    let Some(ks) = &rf.kinds else {
        return Ok(Vec::new());
    };
    ks.get_ref()
        .iter()
        .map(|k| {
            crate::model::EventKind::ALL
                .iter()
                .copied()
                .find(|e| e.name() == k.get_ref())
                .ok_or_else(|| {
                    rule_error(
                        src,
                        k.span().start,
                        format!("unknown event kind `{}` in `kinds`", k.get_ref()),
                    )
                })
        })
        .collect()
}

/// The rule as a metric of the reports.
fn metric_info(rf: &RuleFile, src: &Source) -> MetricInfo {
    MetricInfo {
        id: rf.id.get_ref().clone(),
        name: rf.name.clone(),
        long_name: rf.long_name.clone().unwrap_or_else(|| rf.name.clone()),
        parent: rf.parent.as_ref().map(|p| p.get_ref().clone()),
        unit: rf.unit,
        paradigm: rf.paradigm.clone(),
        order: rf.order,
        // one paragraph each, however the TOML file wraps its lines
        description: rf
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        diagnosis: rf
            .diagnosis
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        source: src.path.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::raw_offset;

    /// The offset of decoded position `pos` of the string value `raw` (from its opening
    /// delimiter), checked against the character it must point at.
    fn at(raw: &str, pos: usize) -> char {
        let text = format!("k = {raw}\n");
        let decoded: toml::Value = toml::from_str(&text).unwrap();
        let decoded = decoded["k"].as_str().unwrap();
        let off = raw_offset(&text, 4, pos);
        let c = text[off..].chars().next().unwrap();
        // the character found in the raw text is the one decoded (or starts its escape)
        let d = decoded[pos..].chars().next().unwrap();
        assert!(c == d || c == '\\', "{raw:?} {pos}: {c:?} vs {d:?}");
        c
    }

    #[test]
    fn raw_offsets_walk_delimiters_and_escapes() {
        assert_eq!(at(r#""a + T""#, 4), 'T');
        assert_eq!(at(r#"'a + T'"#, 4), 'T');
        assert_eq!(at(r#""\"x\" + T""#, 6), 'T');
        assert_eq!(at(r#""\\ T""#, 2), 'T');
        assert_eq!(at(r#""\u00e9 T""#, 3), 'T');
        assert_eq!(at(r#""\U0001F600 T""#, 5), 'T');
        assert_eq!(at("\"\"\"\na + T\"\"\"", 4), 'T');
        assert_eq!(at("\"\"\"\r\na\r\n+ T\"\"\"", 4), 'T');
        assert_eq!(at("'''\na\\ + T'''", 5), 'T');
        // a line-ending backslash and the whitespace after it vanish
        assert_eq!(at("\"\"\"a \\  \n    + T\"\"\"", 4), 'T');
        assert_eq!(at("\"é + T\"", 5), 'T');
    }
}
