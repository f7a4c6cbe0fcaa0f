//! The pattern language (docs/rules.md): one TOML file per metric under `rules/`, parsed,
//! type-checked and compiled once. Built-in rules are embedded at build time; `--rules DIR`
//! adds rules or overrides built-ins by id. No Rust code names a pattern.

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

/// How many rules are built in.
pub fn builtin_count() -> usize {
    builtin::BUILTIN.len()
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupSpec {
    by: Spanned<String>,
    when: Option<Spanned<String>>,
    keep: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueSpec {
    of: String,
    size: usize,
    take: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    id: String,
    name: String,
    long_name: Option<String>,
    parent: Option<String>,
    unit: Unit,
    paradigm: Option<String>,
    #[serde(default = "default_order")]
    order: i64,
    description: String,
    diagnosis: String,
    on: Trigger,
    of: Option<String>,
    class: Option<String>,
    kinds: Option<Vec<String>>,
    #[serde(default, rename = "let")]
    lets: Vec<Spanned<String>>,
    when: Option<Spanned<String>>,
    #[serde(rename = "for")]
    for_members: Option<Spanned<String>>,
    severity: Option<Spanned<String>>,
    at: Option<Spanned<String>>,
    violation: Option<Spanned<String>>,
    value: Option<Spanned<String>>,
    group: Option<GroupSpec>,
    queue: Option<QueueSpec>,
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
    /// Rules and metrics this rule reads (evaluation order).
    pub uses_rules: Vec<u16>,
    pub uses_metrics: Vec<u16>,
}

/// Every rule, compiled, in evaluation order constraints resolved by the engine.
#[derive(Clone, Debug)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    pub interner: Interner,
    pub regexes: Vec<regex::Regex>,
}

struct Source {
    path: String,
    text: String,
}

/// `file:line:col` of a byte offset in a file's text.
fn line_col(text: &str, offset: usize) -> (u64, u64) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() as u64 + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
    (line, col)
}

fn rule_error(src: &Source, offset: usize, msg: impl std::fmt::Display) -> Error {
    let (line, col) = line_col(&src.text, offset);
    Error::Usage(format!("{}:{line}:{col}: {msg}", src.path))
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
        let mut parsed: Vec<(RuleFile, usize)> = Vec::new();
        for (k, s) in sources.iter().enumerate() {
            let rf: RuleFile = toml::from_str(&s.text).map_err(|e| {
                let off = e.span().map_or(0, |r| r.start);
                rule_error(s, off, e.message().trim())
            })?;
            if !rf.id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                || !rf
                    .id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                return Err(rule_error(
                    s,
                    0,
                    format!("rule id `{}` must match [a-z][a-z0-9_]*", rf.id),
                ));
            }
            // a later file with the same id overrides an earlier one (user over built-in)
            match parsed.iter().position(|(r, _)| r.id == rf.id) {
                Some(i) if sources[parsed[i].1].path.starts_with("rules/") => parsed[i] = (rf, k),
                Some(_) => {
                    return Err(rule_error(
                        s,
                        0,
                        format!("rule `{}` is defined twice", rf.id),
                    ))
                }
                None => parsed.push((rf, k)),
            }
        }
        let ids: Vec<String> = parsed.iter().map(|(r, _)| r.id.clone()).collect();
        for (r, k) in &parsed {
            if let Some(p) = &r.parent {
                if !ids.contains(p) {
                    return Err(rule_error(
                        &sources[*k],
                        0,
                        format!("parent metric `{p}` does not exist"),
                    ));
                }
            }
        }
        let mut interner = Interner::default();
        let mut regexes = Vec::new();
        // rules whose instances feed others must be compiled first (their bindings are types)
        let mut rules: Vec<Option<Rule>> = vec![None; parsed.len()];
        let mut item_vars: Vec<Vec<(String, Type, u16)>> = vec![Vec::new(); parsed.len()];
        let mut pending: Vec<usize> = (0..parsed.len()).collect();
        while !pending.is_empty() {
            let before = pending.len();
            let mut still = Vec::new();
            for &i in &pending {
                let (rf, k) = &parsed[i];
                let feeder = rf.of.as_ref().or(rf.queue.as_ref().map(|q| &q.of));
                if let Some(f) = feeder {
                    let Some(fi) = ids.iter().position(|x| x == f) else {
                        return Err(rule_error(
                            &sources[*k],
                            0,
                            format!("rule `{f}` does not exist"),
                        ));
                    };
                    if rules[fi].is_none() {
                        still.push(i);
                        continue;
                    }
                }
                let rule = compile_rule(
                    rf,
                    &sources[*k],
                    &ids,
                    &item_vars,
                    &mut interner,
                    &mut regexes,
                )?;
                item_vars[i] = rule.vars.clone();
                rules[i] = Some(rule);
            }
            if still.len() == before {
                let (_, k) = &parsed[still[0]];
                return Err(rule_error(
                    &sources[*k],
                    0,
                    "rules feed each other in a cycle",
                ));
            }
            pending = still;
        }
        Ok(RuleSet {
            rules: rules.into_iter().flatten().collect(),
            interner,
            regexes,
        })
    }

    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.rules.iter().position(|r| r.info.id == id)
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

fn compile_rule(
    rf: &RuleFile,
    src: &Source,
    ids: &[String],
    item_vars: &[Vec<(String, Type, u16)>],
    interner: &mut Interner,
    regexes: &mut Vec<regex::Regex>,
) -> Result<Rule> {
    let mut scope = Scope {
        vars: Vec::new(),
        member_lets: Vec::new(),
        has_members: matches!(rf.on, Trigger::Collective | Trigger::WorldCall),
        item_vars,
        interner,
        regexes,
        rule_ids: ids,
        metric_ids: ids,
        uses_rules: Vec::new(),
        uses_metrics: Vec::new(),
        slots: 0,
    };
    let need = |field: &Option<Spanned<String>>, what: &str| -> Result<()> {
        if field.is_none() {
            return Err(rule_error(
                src,
                0,
                format!("a rule with on = \"{:?}\" needs `{what}`", rf.on).to_lowercase(),
            ));
        }
        Ok(())
    };
    let mut of = None;
    match rf.on {
        Trigger::Receive => {
            scope.declare("R", Type::Event);
            scope.declare("S", Type::Event);
        }
        Trigger::Send => {
            for v in ["S", "R", "C", "Q"] {
                scope.declare(v, Type::Event);
            }
        }
        Trigger::Collective => {
            scope.declare("op", Type::Str);
            scope.declare("size", Type::Num);
            scope.declare("root", Type::Num);
        }
        Trigger::WorldCall => {
            if rf.class.is_none() {
                return Err(rule_error(
                    src,
                    0,
                    "a rule with on = \"world_call\" needs `class`",
                ));
            }
            scope.declare("size", Type::Num);
        }
        Trigger::Event => {
            scope.declare("E", Type::Event);
        }
        Trigger::Callpath => {
            scope.declare("time", Type::Num);
            scope.declare("visits", Type::Num);
            scope.declare("callee", Type::Region);
        }
        Trigger::Rule => {
            let Some(f) = &rf.of else {
                return Err(rule_error(src, 0, "a rule with on = \"rule\" needs `of`"));
            };
            let fi = ids.iter().position(|x| x == f).unwrap_or(0);
            of = Some(fi as u16);
            // the feeding rule's bindings, in the same slots, plus its value
            for (n, t, s) in &item_vars[fi] {
                scope.vars.push((n.clone(), *t, *s));
                scope.slots = scope.slots.max(s + 1);
            }
        }
        Trigger::Sum | Trigger::Derived => {}
    }
    let compile_str =
        |s: &Spanned<String>, scope: &mut Scope, want: Option<Type>| -> Result<(Expr, Type)> {
            let ast = parse::parse(s.get_ref())
                .map_err(|e| rule_error(src, s.span().start + 1 + e.pos, e.msg))?;
            compile::compile(&ast, scope, want)
                .map_err(|e| rule_error(src, s.span().start + 1 + e.pos, e.msg))
        };
    let queue = match &rf.queue {
        Some(q) => {
            let qi = ids.iter().position(|x| *x == q.of).unwrap_or(0);
            let slot = scope.declare("B", Type::Item(qi as u16));
            let (take, _) = compile_str(&q.take, &mut scope, Some(Type::Bool))?;
            Some(Queue {
                of: qi as u16,
                size: q.size,
                take,
                slot,
            })
        }
        None => None,
    };
    let mut lets = Vec::new();
    let mut member_slots = 0u16;
    for l in &rf.lets {
        let (mscope, name, offset, ast) = parse::parse_binding(l.get_ref())
            .map_err(|e| rule_error(src, l.span().start + 1 + e.pos, e.msg))?;
        let base = l.span().start + 1;
        if let Some(ms) = &mscope {
            if !scope.has_members {
                return Err(rule_error(
                    src,
                    base,
                    format!("`{ms}.{name}`: per-member bindings need a collective trigger"),
                ));
            }
            let m = scope.declare(ms, Type::Member);
            let (e, t) = compile::compile(&ast, &mut scope, None)
                .map_err(|e| rule_error(src, base + e.pos, e.msg))?;
            scope.vars.retain(|v| v.2 != m);
            scope.member_lets.push((name, t, member_slots));
            lets.push(Let::Member {
                slot: member_slots,
                var: m,
                expr: e,
            });
            member_slots += 1;
        } else {
            let (e, t) = compile::compile(&ast, &mut scope, None)
                .map_err(|e| rule_error(src, base + e.pos, e.msg))?;
            let _ = offset;
            let s = scope.declare(&name, t);
            lets.push(Let::Inst(s, e));
        }
    }
    let when = match &rf.when {
        Some(w) => Some(compile_str(w, &mut scope, Some(Type::Bool))?.0),
        None => None,
    };
    let group = match &rf.group {
        Some(g) => {
            if g.keep != "max" {
                return Err(rule_error(
                    src,
                    0,
                    format!("group keep = \"{}\": only \"max\" is supported", g.keep),
                ));
            }
            let by = compile_str(&g.by, &mut scope, Some(Type::Event))?.0;
            let when = match &g.when {
                Some(w) => Some(compile_str(w, &mut scope, Some(Type::Bool))?.0),
                None => None,
            };
            Some(Group { by, when })
        }
        None => None,
    };
    // severity, `for`, `at` and `violation` see the member `m` in collective rules
    let member_slot = if scope.has_members {
        Some(scope.declare("m", Type::Member))
    } else {
        None
    };
    let for_members = match &rf.for_members {
        Some(w) => Some(compile_str(w, &mut scope, Some(Type::Bool))?.0),
        None => None,
    };
    let mut severity = None;
    let mut at = None;
    let mut value = None;
    match rf.on {
        Trigger::Sum => {}
        Trigger::Derived => {
            need(&rf.value, "value")?;
            value = Some(
                compile_str(
                    rf.value.as_ref().expect("checked"),
                    &mut scope,
                    Some(Type::Num),
                )?
                .0,
            );
        }
        _ => {
            need(&rf.severity, "severity")?;
            severity = Some(
                compile_str(
                    rf.severity.as_ref().expect("checked"),
                    &mut scope,
                    Some(Type::Num),
                )?
                .0,
            );
            if rf.on != Trigger::Callpath {
                need(&rf.at, "at")?;
                at = Some(
                    compile_str(
                        rf.at.as_ref().expect("checked"),
                        &mut scope,
                        Some(Type::Event),
                    )?
                    .0,
                );
            }
        }
    }
    let violation = match &rf.violation {
        Some(w) => Some(compile_str(w, &mut scope, Some(Type::Bool))?.0),
        None => None,
    };
    let kinds = match &rf.kinds {
        Some(ks) => ks
            .iter()
            .map(|k| {
                crate::model::EventKind::ALL
                    .iter()
                    .copied()
                    .find(|e| e.name() == k)
                    .ok_or_else(|| {
                        rule_error(src, 0, format!("unknown event kind `{k}` in `kinds`"))
                    })
            })
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    if rf.on == Trigger::Event && kinds.is_empty() {
        return Err(rule_error(
            src,
            0,
            "a rule with on = \"event\" needs `kinds`",
        ));
    }
    // what rules fed by this one see: where it attributed (`at`) and its `value`
    let at_slot = scope.declare("at", Type::Event);
    let value_slot = scope.declare("value", Type::Num);
    let vars = scope.vars.clone();
    Ok(Rule {
        info: MetricInfo {
            id: rf.id.clone(),
            name: rf.name.clone(),
            long_name: rf.long_name.clone().unwrap_or_else(|| rf.name.clone()),
            parent: rf.parent.clone(),
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
        },
        on: rf.on,
        of,
        class: rf.class.clone(),
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
        member_var: member_slot,
        at_slot,
        value_slot,
        slots: scope.slots,
        member_slots,
        vars,
        uses_rules: scope.uses_rules,
        uses_metrics: scope.uses_metrics,
    })
}
