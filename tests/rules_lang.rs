//! The pattern language (docs/rules.md) through the library: the worked custom rules of
//! `testdata/rules/`, overriding a built-in rule by id, and bad rules reported at their exact
//! `file:line:col` with a message that says what is wrong.
//!
//! Tests marked `#[ignore = "..."]` assert the behaviour the language should have and does not
//! have yet; the reason names the problem.

use perfexpert::analysis::{analyse, Analysis};
use perfexpert::replay::Replay;
use perfexpert::rules::RuleSet;
use perfexpert::Trace;
use std::path::{Path, PathBuf};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

/// Read, replay and analyse a trace of `testdata/` with the built-ins plus `extra`.
fn analysed(trace: &str, extra: &[PathBuf]) -> (Trace, Replay, Analysis) {
    let rules = RuleSet::load(extra).unwrap_or_else(|e| panic!("{e}"));
    let trace = perfexpert::open(&testdata(trace)).unwrap();
    let replay = Replay::new(&trace);
    let a = analyse(&trace, &replay, rules);
    (trace, replay, a)
}

/// Every non-zero value of metric `id`: (call path, rank, value).
fn values(t: &Trace, r: &Replay, a: &Analysis, id: &str) -> Vec<(String, u32, f64)> {
    let k = a
        .rules
        .index_of(id)
        .unwrap_or_else(|| panic!("no metric {id}"));
    let mut out = Vec::new();
    for c in 0..a.ncnode as u32 {
        for l in 0..a.nloc as u32 {
            let v = a.value(k, c, l);
            if v != 0.0 {
                let rank = t.defs.locations[l as usize].rank.unwrap_or(u32::MAX);
                out.push((r.path_name(t, c), rank, v));
            }
        }
    }
    out
}

fn total(a: &Analysis, id: &str) -> f64 {
    a.values[a.rules.index_of(id).unwrap()].iter().sum()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Lines 1–5 of most bad rules below; what a test adds starts on line 6.
const PREAMBLE: &str = r#"id = "bad_rule"
name = "Bad"
unit = "sec"
description = "d"
diagnosis = "d"
"#;

/// Load the built-ins plus these files, written to a fresh directory; the error as printed,
/// with the directory left out (`bad.toml:7:13: ...`).
fn load_err(files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    match RuleSet::load(&[dir.path().to_path_buf()]) {
        Ok(_) => panic!("the rules loaded: {files:?}"),
        Err(e) => {
            let prefix = format!("{}{}", dir.path().display(), std::path::MAIN_SEPARATOR);
            let msg = e.to_string();
            msg.strip_prefix(&prefix).unwrap_or(&msg).to_string()
        }
    }
}

/// The error of one bad rule `bad.toml`: the preamble plus `body` (from line 6).
fn bad(body: &str) -> String {
    load_err(&[("bad.toml", &format!("{PREAMBLE}{body}"))])
}

/// `err` is about `file` and ends with `msg` (for errors whose position is still wrong).
fn assert_msg(err: &str, file: &str, msg: &str) {
    assert!(
        err.starts_with(&format!("{file}:")) && err.ends_with(&format!(": {msg}")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// The worked custom rules (docs/rules.md, "A worked custom rule")

#[test]
fn the_worked_custom_rules_load_and_check() {
    let rs = RuleSet::load(&[testdata("rules")]).unwrap();
    // the two worked rules and the wait state with a cause of docs/rules.md (its three
    // root-cause metric files are not rules: `rc_metrics`)
    assert_eq!(rs.rules.len(), perfexpert::rules::builtin_count() + 3);
    assert_eq!(
        rs.rc_metrics.len(),
        RuleSet::load(&[]).unwrap().rc_metrics.len() + 3
    );
    let k = rs.index_of("mpi_late_small_sender").unwrap();
    let info = &rs.rules[k].info;
    assert_eq!(info.parent.as_deref(), Some("mpi_latesender"));
    assert_eq!(info.long_name, "MPI Late Sender, messages below 1 KiB");
    assert!(info.source.ends_with("mpi_late_small_sender.toml"));
    assert!(rs.index_of("mpi_long_recv_count").is_some());
}

#[test]
fn the_worked_rule_finds_late_sender_of_small_messages_in_ls() {
    let (t, r, a) = analysed("scorep/ls/traces.otf2", &[testdata("rules")]);
    let got = values(&t, &r, &a, "mpi_late_small_sender");
    let path = "main/late_sender_phase/MPI_Recv";
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].0.as_str(), got[0].1), (path, 1));
    assert!(close(got[0].2, 0.300163969), "{got:?}");
    assert_eq!((got[1].0.as_str(), got[1].1), (path, 3));
    assert!(close(got[1].2, 0.600190006), "{got:?}");
    // every message of ls carries 64 bytes: all of Late Sender is small-message Late Sender
    assert_eq!(got, values(&t, &r, &a, "mpi_latesender"));
    // 6 instances (3 per receiving rank), fed one by one from mpi_latesender
    let k = a.rules.index_of("mpi_late_small_sender").unwrap();
    assert_eq!(a.stats[k].values().map(|s| s.n).sum::<u64>(), 6);
}

#[test]
fn the_worked_rule_keeps_only_part_of_late_sender_where_messages_are_large() {
    let (_, _, a) = analysed("scorep/npb_lu_S", &[testdata("rules")]);
    let (ls, small) = (
        total(&a, "mpi_latesender"),
        total(&a, "mpi_late_small_sender"),
    );
    assert!(close(ls, 0.044747077), "{ls}");
    assert!(close(small, 0.035146653), "{small}");
}

#[test]
fn the_count_example_counts_receives_that_waited_over_a_millisecond() {
    let (t, r, a) = analysed("scorep/ls", &[testdata("rules")]);
    let path = "main/late_sender_phase/MPI_Recv".to_string();
    assert_eq!(
        values(&t, &r, &a, "mpi_long_recv_count"),
        [(path.clone(), 1, 3.0), (path, 3, 3.0)]
    );
    // in nb one MPI_Waitall completes two late receives: both count here, while Late Sender
    // keeps only the longest wait of a multi-wait call ([group] in mpi_latesender.toml)
    let (_, _, a) = analysed("scorep/nb", &[testdata("rules")]);
    assert_eq!(total(&a, "mpi_long_recv_count"), 14.0);
    assert_eq!(total(&a, "mpi_cls_count"), 13.0);
}

/// A queue whose instances hold queued instances of their own: its `take` reads through
/// them (`B.B.S.time`). Every wrong-order late sender of `wo` qualifies (as it did before
/// queues kept their instances' keys; keys of such queues are never kept, as the nested
/// instance indexes the list of taken instances).
#[test]
fn a_queue_of_a_queue_consumer_reads_through_its_instances() {
    let (_, _, a) = analysed("scorep/wo/traces.otf2", &[testdata("rules-nested")]);
    let (nested, wo) = (total(&a, "nested_wo"), total(&a, "mpi_latesender_wo"));
    assert!(nested > 0.0 && close(nested, wo), "{nested} {wo}");
}

// ---------------------------------------------------------------------------------------------
// Overriding a built-in by id

#[test]
fn a_rule_with_a_built_in_id_replaces_the_built_in() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("my_latesender.toml");
    std::fs::write(
        &f,
        r#"id = "mpi_latesender"
name = "Late Sender (large messages)"
parent = "mpi_point2point"
unit = "sec"
paradigm = "mpi"
order = 1
on = "receive"
let = ["ts = min(S.enter.time, R.leave.time)"]
when = "S.bytes >= 1024"
severity = "ts - R.enter.time"
at = "R"
description = "Late Sender of messages of 1 KiB or more."
diagnosis = "d"
"#,
    )
    .unwrap();
    let builtin = RuleSet::load(&[]).unwrap();
    let rs = RuleSet::load(&[f]).unwrap();
    assert_eq!(rs.rules.len(), builtin.rules.len());
    let k = rs.index_of("mpi_latesender").unwrap();
    assert_eq!(Some(k), builtin.index_of("mpi_latesender"));
    assert_eq!(rs.rules[k].info.name, "Late Sender (large messages)");
    assert!(rs.rules[k].info.source.ends_with("my_latesender.toml"));

    let (t, r, a) = analysed("scorep/ls", &[dir.path().to_path_buf()]);
    // ls sends 64-byte messages only: the override finds nothing, and neither do the
    // built-in rules fed by it
    assert_eq!(values(&t, &r, &a, "mpi_latesender"), []);
    assert_eq!(values(&t, &r, &a, "mpi_cls_count"), []);
    assert!(close(total(&a, "mpi"), 2.622525426));
}

#[test]
fn two_user_rules_with_one_id_are_an_error() {
    let rule = format!("{PREAMBLE}on = \"receive\"\nseverity = \"1\"\nat = \"R\"\n");
    let err = load_err(&[("a.toml", &rule), ("b.toml", &rule)]);
    assert_msg(&err, "b.toml", "rule `bad_rule` is defined twice");
}

#[test]
fn a_missing_rules_path_is_an_error() {
    let err = RuleSet::load(&[PathBuf::from("no/such/rules")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no/such/rules: no such rule file or directory"
    );
}

// ---------------------------------------------------------------------------------------------
// Bad rules: exact positions and messages

#[test]
fn unknown_name() {
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"R.time - T.time\"\nat = \"R\"\n"),
        "bad.toml:7:22: unknown name `T`; known here: R, S"
    );
    // lets are known after their binding, in order
    assert_eq!(
        bad("on = \"receive\"\nlet = [\"a = 1\", \"b = a + c\"]\nseverity = \"b\"\nat = \"R\"\n"),
        "bad.toml:7:26: unknown name `c`; known here: R, S, a"
    );
}

#[test]
fn unknown_field_lists_the_fields() {
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"R.time - S.duration\"\nat = \"R\"\n"),
        "bad.toml:7:24: an event has no field `duration`; it has: time, enter, leave, call, \
         bytes, tag, rank, kind, send, recv, sent, received, cancelled, last_release"
    );
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R.call.clas == 'P2P_RECV'\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:16: a region has no field `clas`; it has: name, paradigm, role, class, mode"
    );
    // a member's fields include the rule's per-member bindings
    assert_eq!(
        bad("on = \"collective\"\nlet = [\"m.late = m.begin > 0\"]\nseverity = \"1\"\nat = \"m.evnt\"\n"),
        "bad.toml:9:9: a member has no field `evnt`; it has: begin, end, sent, recv, rank, \
         tasks, event, late"
    );
    // a queued instance `B` has the bindings of the rule it came from
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"B.value\"\nat = \"B.at\"\n[queue]\nof = \"mpi_latesender\"\nsize = 10\ntake = \"B.wait > 0\"\n"),
        "bad.toml:12:11: a rule instance has no field `wait`; it has: R, S, ts, at, value"
    );
}

#[test]
fn type_mismatch() {
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"pos(S.time - R.time)\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:9: expected a boolean, this is a number"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"R\"\nat = \"R\"\n"),
        "bad.toml:7:13: expected a number, this is an event"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"1\"\nat = \"min(R.time, S.time)\"\n"),
        "bad.toml:8:7: expected an event, this is a number"
    );
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R.call.name == 1\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:21: `==` compares a string with a number"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"R.time + S\"\nat = \"R\"\n"),
        "bad.toml:7:20: `+` needs two numbers, found a number and an event"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"if S.time > R.time then 1 else 'late'\"\nat = \"R\"\n"),
        "bad.toml:7:13: the branches of `if` differ: number and string"
    );
}

#[test]
fn type_errors_point_at_the_start_of_the_expression() {
    // today 7:16, the `-`
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R.time - S.time\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:9: expected a boolean, this is a number"
    );
    // today 7:11, the `time`
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R.time\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:9: expected a boolean, this is a number"
    );
    // today 8:9
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"1\"\nat = \"R.time\"\n"),
        "bad.toml:8:7: expected an event, this is a number"
    );
    // today 7:37, the second `name`
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"matches(R.call.name, R.call.name)\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:30: `matches` needs a string literal here"
    );
}

#[test]
fn unknown_function() {
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"wait(R)\"\nat = \"R\"\n"),
        "bad.toml:7:13: unknown function `wait`; known: pos, abs, min, max, matches, exists, \
         had, metric, and the aggregates max/min/sum/count/any/all/argmax(m in members: ...)"
    );
    assert_eq!(
        bad("on = \"collective\"\nseverity = \"avg(m in members: m.end)\"\nat = \"m.event\"\n"),
        "bad.toml:7:13: unknown aggregate `avg`; known: max, min, sum, count, any, all, argmax"
    );
}

#[test]
fn syntax_errors_point_at_the_offending_token() {
    // the missing `)`: at the end of the expression, the closing quote
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"min(S.enter.time, R.leave.time - R.enter.time\"\nat = \"R\"\n"),
        "bad.toml:7:58: expected `)`, found the end of the expression"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"R.time -* S.time\"\nat = \"R\"\n"),
        "bad.toml:7:21: expected an expression, found `*`"
    );
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R.time < S.time < 1\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:25: unexpected `<` after the expression"
    );
    assert_eq!(
        bad("on = \"receive\"\nlet = [\"wait R.time\"]\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:9: expected a binding `name = expression`"
    );
}

#[test]
fn invalid_regex_in_matches() {
    let err =
        bad("on = \"receive\"\nwhen = \"matches(R.call.name, '^MPI_(Recv')\"\nseverity = \"1\"\nat = \"R\"\n");
    // the position is the pattern's opening quote
    assert!(
        err.starts_with("bad.toml:7:30: invalid regular expression"),
        "{err}"
    );
    assert_eq!(
        bad(
            "on = \"collective\"\nwhen = \"matches(op, op)\"\nseverity = \"1\"\nat = \"m.event\"\n"
        ),
        "bad.toml:7:21: `matches` needs a string literal here"
    );
}

#[test]
fn invalid_regex_is_reported_on_one_line() {
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"matches(R.call.name, '^MPI_(Recv')\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:30: invalid regular expression: unclosed group"
    );
}

#[test]
fn unknown_parent_metric() {
    let err = bad("parent = \"mpi_late_sender\"\non = \"receive\"\nseverity = \"1\"\nat = \"R\"\n");
    assert_msg(
        &err,
        "bad.toml",
        "parent metric `mpi_late_sender` does not exist",
    );
}

#[test]
fn missing_severity() {
    // a missing key has no place of its own: line 1, column 1, as for TOML's missing fields
    assert_eq!(
        bad("on = \"receive\"\nat = \"R\"\n"),
        "bad.toml:1:1: a rule with on = \"receive\" needs `severity`"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"1\"\n"),
        "bad.toml:1:1: a rule with on = \"receive\" needs `at`"
    );
    assert_eq!(
        bad("on = \"derived\"\n"),
        "bad.toml:1:1: a rule with on = \"derived\" needs `value`"
    );
    assert_eq!(
        load_err(&[(
            "bad.toml",
            "id = \"bad_rule\"\nunit = \"sec\"\ndescription = \"d\"\ndiagnosis = \"d\"\non = \"sum\"\n"
        )]),
        "bad.toml:1:1: missing field `name`"
    );
}

#[test]
fn missing_severity_names_the_trigger_as_written() {
    assert_eq!(
        bad("on = \"world_call\"\nclass = \"MPI_FINALIZE\"\nat = \"m.event\"\n"),
        "bad.toml:1:1: a rule with on = \"world_call\" needs `severity`"
    );
}

#[test]
fn unknown_toml_key() {
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"1\"\nat = \"R\"\ntreshold = 0.5\n"),
        "bad.toml:9:1: unknown field `treshold`, expected one of `id`, `name`, `long_name`, \
         `parent`, `unit`, `paradigm`, `order`, `description`, `diagnosis`, `on`, `of`, \
         `class`, `kinds`, `let`, `when`, `for`, `severity`, `at`, `violation`, `value`, \
         `group`, `queue`, `cause`"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"1\"\nat = \"R\"\n[group]\nby = \"R.enter\"\nkeep = \"max\"\nsize = 3\n"),
        "bad.toml:12:1: unknown field `size`, expected one of `by`, `when`, `keep`"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"1\"\nat = \"R\"\norder = \"first\"\n"),
        "bad.toml:9:9: invalid type: string \"first\", expected i64"
    );
}

#[test]
fn unknown_trigger() {
    assert_eq!(
        bad("on = \"recv\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:6:6: unknown variant `recv`, expected one of `receive`, `send`, \
         `collective`, `world_call`, `team`, `thread_barrier`, `event`, `callpath`, `rule`, `sum`, `derived`"
    );
}

#[test]
fn rule_id_with_capitals() {
    let err = load_err(&[(
        "bad.toml",
        "# my rule\nid = \"LateSmall\"\nname = \"X\"\nunit = \"sec\"\ndescription = \"d\"\n\
         diagnosis = \"d\"\non = \"receive\"\nseverity = \"1\"\nat = \"R\"\n",
    )]);
    assert_msg(
        &err,
        "bad.toml",
        "rule id `LateSmall` must match [a-z][a-z0-9_]*",
    );
}

#[test]
fn of_names_a_missing_rule() {
    let err = bad("on = \"rule\"\nof = \"mpi_late_sendr\"\nseverity = \"value\"\nat = \"at\"\n");
    assert_msg(&err, "bad.toml", "rule `mpi_late_sendr` does not exist");
    let err = bad("on = \"receive\"\nseverity = \"B.value\"\nat = \"B.at\"\n[queue]\nof = \"nope\"\nsize = 1\ntake = \"true\"\n");
    assert_msg(&err, "bad.toml", "rule `nope` does not exist");
}

#[test]
fn rules_feeding_each_other_in_a_cycle() {
    let rule = |id: &str, of: &str| {
        format!(
            "id = \"{id}\"\nname = \"X\"\nunit = \"sec\"\ndescription = \"d\"\ndiagnosis = \"d\"\n\
             on = \"rule\"\nof = \"{of}\"\nseverity = \"value\"\nat = \"at\"\n"
        )
    };
    // the message names the rules of the cycle (see also a_cycle_names_its_rules)
    assert_eq!(
        load_err(&[
            ("a.toml", &rule("cyc_a", "cyc_b")),
            ("b.toml", &rule("cyc_b", "cyc_a")),
        ]),
        "a.toml:7:6: rules feed each other in a cycle: cyc_a → cyc_b → cyc_a"
    );
    assert_eq!(
        load_err(&[("self.toml", &rule("cyc_self", "cyc_self"))]),
        "self.toml:7:6: rules feed each other in a cycle: cyc_self → cyc_self"
    );
}

#[test]
fn in_without_a_list_literal() {
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R.call.class in 'P2P_RECV'\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:22: `in` needs a list literal on its right, like ['a', 'b']"
    );
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R.call.class in ['P2P_RECV', 1]\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:38: list items must be string literals"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"['a']\"\nat = \"R\"\n"),
        "bad.toml:7:13: a list can only stand after `in`"
    );
}

#[test]
fn names_that_exist_only_in_some_places() {
    // `m` is bound for `for`, `severity`, `at` and `violation`, not for `when`
    assert_eq!(
        bad("on = \"collective\"\nwhen = \"m.end > 0\"\nseverity = \"1\"\nat = \"m.event\"\n"),
        "bad.toml:7:9: unknown name `m`; known here: op, size, root"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"max(m in members: m.end)\"\nat = \"R\"\n"),
        "bad.toml:7:13: `members` is not a collection here (only `members` of a collective \
         instance is)"
    );
    assert_eq!(
        bad("on = \"receive\"\nlet = [\"m.late = true\"]\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:9: `m.late`: per-member bindings need a collective trigger"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"if had('mpi_late_sender', R.enter) then 1 else 0\"\nat = \"R\"\n"),
        "bad.toml:7:20: no rule `mpi_late_sender`"
    );
    assert_eq!(
        bad("on = \"derived\"\nvalue = \"metric('mpi') - metric('mpi_p2p')\"\n"),
        "bad.toml:7:33: no metric `mpi_p2p`"
    );
    assert_eq!(
        bad("on = \"world_call\"\nseverity = \"1\"\nat = \"m.event\"\n"),
        "bad.toml:1:1: a rule with on = \"world_call\" needs `class`"
    );
    assert_eq!(
        bad("on = \"event\"\nseverity = \"1\"\nat = \"E\"\n"),
        "bad.toml:1:1: a rule with on = \"event\" needs `kinds`"
    );
}

// ---------------------------------------------------------------------------------------------
// Problems found while documenting the language: the behaviour it should have.

#[test]
fn file_level_errors_point_at_the_offending_value() {
    assert_eq!(
        bad("parent = \"mpi_late_sender\"\non = \"receive\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:6:10: parent metric `mpi_late_sender` does not exist"
    );
    assert_eq!(
        load_err(&[(
            "bad.toml",
            "# my rule\nid = \"LateSmall\"\nname = \"X\"\nunit = \"sec\"\ndescription = \"d\"\n\
             diagnosis = \"d\"\non = \"receive\"\nseverity = \"1\"\nat = \"R\"\n",
        )]),
        "bad.toml:2:6: rule id `LateSmall` must match [a-z][a-z0-9_]*"
    );
    assert_eq!(
        bad("on = \"rule\"\nof = \"mpi_late_sendr\"\nseverity = \"value\"\nat = \"at\"\n"),
        "bad.toml:7:6: rule `mpi_late_sendr` does not exist"
    );
    assert_eq!(
        bad("on = \"event\"\nkinds = [\"MpiSend\", \"MpiSent\"]\nseverity = \"1\"\nat = \"E\"\n"),
        "bad.toml:7:21: unknown event kind `MpiSent` in `kinds`"
    );
    let rule = format!("{PREAMBLE}on = \"receive\"\nseverity = \"1\"\nat = \"R\"\n");
    assert_eq!(
        load_err(&[("a.toml", &rule), ("b.toml", &rule)]),
        "b.toml:1:6: rule `bad_rule` is defined twice"
    );
}

#[test]
fn a_cycle_names_its_rules() {
    let rule = |id: &str, of: &str| {
        format!(
            "id = \"{id}\"\nname = \"X\"\nunit = \"sec\"\ndescription = \"d\"\ndiagnosis = \"d\"\n\
             on = \"rule\"\nof = \"{of}\"\nseverity = \"value\"\nat = \"at\"\n"
        )
    };
    assert_eq!(
        load_err(&[
            ("a.toml", &rule("cyc_a", "cyc_b")),
            ("b.toml", &rule("cyc_b", "cyc_a")),
        ]),
        "a.toml:7:6: rules feed each other in a cycle: cyc_a → cyc_b → cyc_a"
    );
}

#[test]
fn positions_inside_multi_line_strings() {
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"\"\"\nR.time - T.time\"\"\"\nat = \"R\"\n"),
        "bad.toml:8:10: unknown name `T`; known here: R, S"
    );
}

#[test]
fn positions_after_escapes() {
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R.call.name == \\\"MPI_Recv\\\" && T\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:40: unknown name `T`; known here: R, S"
    );
}

#[test]
fn no_empty_lists_in_messages() {
    assert_eq!(
        bad("on = \"derived\"\nvalue = \"time - metric('mpi')\"\n"),
        "bad.toml:7:10: unknown name `time`; no names are bound here"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"R.time.seconds\"\nat = \"R\"\n"),
        "bad.toml:7:20: a number has no fields"
    );
}

#[test]
fn metric_is_only_for_derived_rules() {
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"metric('time') + 1\"\nat = \"R\"\n"),
        "bad.toml:7:13: metric() can only be used in a rule with on = \"derived\""
    );
}

#[test]
fn had_reads_only_rules_of_an_earlier_pass() {
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"!had('mpi_latesender', R.enter)\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:10: had('mpi_latesender', ...) reads a rule evaluated in the same pass \
         (on = \"receive\"); had() sees only rules with on = \"event\" from a receive rule"
    );
}

#[test]
fn keys_without_meaning_for_the_trigger_are_errors() {
    assert_eq!(
        bad("on = \"callpath\"\nseverity = \"time\"\nat = \"R\"\n"),
        "bad.toml:8:6: `at` has no meaning in a rule with on = \"callpath\""
    );
    assert_eq!(
        bad("on = \"receive\"\nfor = \"true\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:7: `for` has no meaning in a rule with on = \"receive\""
    );
}

#[test]
fn derived_rules_evaluate_their_lets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.toml"),
        format!(
            "{}on = \"derived\"\nlet = [\"m = metric('mpi')\"]\nvalue = \"m\"\n",
            PREAMBLE.replace("bad_rule", "mpi_again")
        ),
    )
    .unwrap();
    let (_, _, a) = analysed("scorep/ls", &[dir.path().to_path_buf()]);
    assert!(close(total(&a, "mpi_again"), total(&a, "mpi")));
}

#[test]
fn derived_metrics_in_a_cycle_are_an_error() {
    let rule = |id: &str, of: &str| {
        format!(
            "id = \"{id}\"\nname = \"X\"\nunit = \"sec\"\ndescription = \"d\"\ndiagnosis = \"d\"\n\
             on = \"derived\"\nvalue = \"metric('{of}') + 1\"\n"
        )
    };
    assert_eq!(
        load_err(&[
            ("a.toml", &rule("der_a", "der_b")),
            ("b.toml", &rule("der_b", "der_a")),
        ]),
        "a.toml:7:10: derived metrics read each other in a cycle: der_a → der_b → der_a"
    );
}

#[test]
fn rules_fed_by_queue_fed_rules_fire() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.toml"),
        format!(
            "{}on = \"rule\"\nof = \"mpi_lswo_different\"\nseverity = \"1\"\nat = \"at\"\n",
            PREAMBLE.replace("bad_rule", "lswo_different_count")
        ),
    )
    .unwrap();
    let (_, _, a) = analysed("scorep/wo", &[dir.path().to_path_buf()]);
    // mpi_lswo_different has 2 instances in wo (rank 0, 2 iterations)
    let k = a.rules.index_of("mpi_lswo_different").unwrap();
    assert_eq!(a.stats[k].values().map(|s| s.n).sum::<u64>(), 2);
    assert_eq!(total(&a, "lswo_different_count"), 2.0);
}

#[test]
fn rules_fed_by_collective_rules_fire() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.toml"),
        format!(
            "{}on = \"rule\"\nof = \"mpi_barrier_wait\"\nseverity = \"1\"\nat = \"at\"\n",
            PREAMBLE.replace("bad_rule", "barrier_wait_count")
        ),
    )
    .unwrap();
    let (_, _, a) = analysed("scorep/barrier", &[dir.path().to_path_buf()]);
    let k = a.rules.index_of("mpi_barrier_wait").unwrap();
    let n: u64 = a.stats[k].values().map(|s| s.n).sum();
    assert!(n > 0);
    assert_eq!(total(&a, "barrier_wait_count"), n as f64);
}

#[test]
fn user_files_under_a_relative_rules_dir_are_not_built_ins() {
    // the test runs in the package root: `rules/common/visits.toml` is given here as a user file
    let dir = tempfile::tempdir().unwrap();
    let dup = dir.path().join("visits.toml");
    std::fs::write(
        &dup,
        std::fs::read_to_string("rules/common/visits.toml").unwrap(),
    )
    .unwrap();
    let err = RuleSet::load(&[PathBuf::from("rules/common/visits.toml"), dup])
        .expect_err("two user files define `visits`");
    assert!(
        err.to_string().ends_with("rule `visits` is defined twice"),
        "{err}"
    );
}

#[test]
fn in_needs_a_string_or_number_and_keywords_are_not_names() {
    assert_eq!(
        bad("on = \"receive\"\nwhen = \"R in [1]\"\nseverity = \"1\"\nat = \"R\"\n"),
        "bad.toml:7:11: `in` needs a string or a number on its left, found an event"
    );
    assert_eq!(
        bad("on = \"receive\"\nlet = [\"then = 1\"]\nseverity = \"then\"\nat = \"R\"\n"),
        "bad.toml:7:9: `then` is a keyword, not a name to bind"
    );
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"1 + if\"\nat = \"R\"\n"),
        "bad.toml:7:17: expected an expression, found the keyword `if`"
    );
}

#[test]
fn a_group_key_must_be_an_event_of_the_rules_location() {
    // statically known: `S` of a receive rule is an event of the sender's location
    assert_eq!(
        bad("on = \"receive\"\nseverity = \"1\"\nat = \"R\"\n[group]\nby = \"S.enter\"\nkeep = \"max\"\n"),
        "bad.toml:10:7: `[group] by` is an event of another location: groups are kept per \
         location, so the key must be an event of the location the rule runs on, like R.enter"
    );
    // found at run time (`S.recv` is the receive, `.enter` its call on the receiver's
    // location, e.g. an MPI_Waitall that completes several receives): such an instance is
    // stored at once, ungrouped
    let dir = tempfile::tempdir().unwrap();
    let rule = |id: &str, by: Option<&str>| {
        let group = by.map_or(String::new(), |b| {
            format!("[group]\nby = \"{b}\"\nkeep = \"max\"\n")
        });
        format!(
            "{}on = \"send\"\nseverity = \"1\"\nat = \"S\"\n{group}",
            PREAMBLE.replace("bad_rule", id)
        )
    };
    for (id, by) in [
        ("send_all", None),
        ("send_by_remote_key", Some("S.recv.enter")),
        ("send_by_call", Some("C.enter")),
    ] {
        std::fs::write(dir.path().join(format!("{id}.toml")), rule(id, by)).unwrap();
    }
    for trace in ["scorep/nb", "scorep/wo", "scorep/npb_lu_S"] {
        let (_, _, a) = analysed(trace, &[dir.path().to_path_buf()]);
        let all = total(&a, "send_all");
        assert!(all > 0.0, "{trace}");
        assert_eq!(total(&a, "send_by_remote_key"), all, "{trace}");
        // a key of the rule's own location does group
        assert!(total(&a, "send_by_call") <= all, "{trace}");
    }
}

#[test]
fn feeding_across_passes_is_checked_at_load() {
    // callpath rules have values per call path, no instances
    assert_eq!(
        bad("on = \"rule\"\nof = \"mpi\"\nseverity = \"1\"\nat = \"at\"\n"),
        "bad.toml:7:6: rule `mpi` cannot feed other rules: a rule with on = \"callpath\" has \
         no instances"
    );
    // groups live in the event, receive and send passes
    assert_eq!(
        bad("on = \"rule\"\nof = \"mpi_barrier_wait\"\nseverity = \"1\"\nat = \"at\"\n[group]\nby = \"at\"\nkeep = \"max\"\n"),
        "bad.toml:10:1: `[group]` has no meaning in a rule with on = \"rule\" fed by rules with \
         on = \"collective\""
    );
    // a queue holds instances of its consumer's pass
    assert_eq!(
        bad("on = \"send\"\nseverity = \"B.value\"\nat = \"B.at\"\n[queue]\nof = \"mpi_latesender\"\nsize = 1\ntake = \"true\"\n"),
        "bad.toml:10:6: rule `mpi_latesender` is evaluated with the on = \"receive\" rules, \
         this rule with the on = \"send\" rules: a queue holds instances of its own pass"
    );
    // had() asks about groups: a rule without one has none
    assert_eq!(
        bad("on = \"send\"\nwhen = \"had('comms_recv', C.enter)\"\nseverity = \"1\"\nat = \"C\"\n"),
        "bad.toml:7:9: had('comms_recv', ...) reads a rule without a [group]: had() asks \
         whether one of its groups kept an instance"
    );
    // from a later pass, the groups of every earlier pass: a collective rule may ask
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.toml"),
        format!(
            "{PREAMBLE}on = \"collective\"\nseverity = \"1\"\nat = \"m.event\"\n\
             for = \"!had('mpi_latesender', m.event.enter)\"\n"
        ),
    )
    .unwrap();
    RuleSet::load(&[dir.path().to_path_buf()]).unwrap();
}

// ---------------------------------------------------------------------------------------------
// The OpenMP extensions (docs/rules.md): triggers `team` and `thread_barrier`, the event field
// `last_release`, the call-path bindings of idle threads

/// Load one user rule (the preamble's metadata, id `id`, plus `body`) and analyse `trace`.
fn with_rule(trace: &str, id: &str, body: &str) -> (Trace, Replay, Analysis) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("x.toml"),
        format!("{}{body}", PREAMBLE.replace("bad_rule", id)),
    )
    .unwrap();
    analysed(trace, &[dir.path().to_path_buf()])
}

#[test]
fn team_trigger_binds_fork_join_size_and_the_threads() {
    // omp_fork: 50 parallel regions of 4 threads; the master's share of each team's lifetime
    let (_, _, a) = with_rule(
        "scorep-omp/omp_fork/traces.otf2",
        "team_lifetime",
        "on = \"team\"\nlet = [\"first = min(m in members: m.begin)\"]\nwhen = \"size == 4\"\n\
         for = \"m.rank == 0\"\nseverity = \"join - fork\"\nat = \"m.event\"\n\
         violation = \"first < fork\"\n",
    );
    let k = a.rules.index_of("team_lifetime").unwrap();
    assert_eq!(a.stats[k].values().map(|s| s.n).sum::<u64>(), 50);
    // the master's inclusive time of the parallel region is join − fork (§3.2)
    let (t, r, _) = analysed("scorep-omp/omp_fork/traces.otf2", &[]);
    let c = (0..r.tree.len() as u32)
        .find(|&c| r.path_name(&t, c) == "main/short_region/!$omp parallel @app.c:19")
        .unwrap();
    let incl = r.locations[0].incl[c as usize] as f64 / t.timer_resolution as f64;
    assert!(close(total(&a, "team_lifetime"), incl), "{incl}");
    // one instance per thread and team without `for`
    let (_, _, a) = with_rule(
        "scorep-omp/omp_fork/traces.otf2",
        "team_members",
        "on = \"team\"\nseverity = \"1\"\nat = \"m.event\"\n",
    );
    assert_eq!(total(&a, "team_members"), 200.0);
}

#[test]
fn thread_barrier_trigger_binds_the_threads_that_reached_it() {
    // omp_barrier: per call of the explicit phase (2 calls) an explicit barrier and the
    // region-end implicit barrier, per call of the implicit phase (2) the implicit barrier of
    // the `for` (OPARI2 merges it with the region's end): 6 instances of 4 threads
    let (_, _, a) = with_rule(
        "scorep-omp/omp_barrier/traces.otf2",
        "barrier_arrivals",
        "on = \"thread_barrier\"\nwhen = \"size == 4\"\nseverity = \"1\"\nat = \"m.event\"\n",
    );
    assert_eq!(total(&a, "barrier_arrivals"), 24.0);
    // `fork` belongs to teams, not to barrier instances
    let err = bad("on = \"thread_barrier\"\nseverity = \"fork\"\nat = \"m.event\"\n");
    assert_eq!(
        err,
        "bad.toml:7:13: unknown name `fork`; known here: size, m"
    );
}

#[test]
fn last_release_is_the_release_an_acquisition_waited_for() {
    // omp_critical: 3 regions × 4 threads acquire the one lock of the critical construct; only
    // the very first acquisition has no earlier release
    let (_, _, a) = with_rule(
        "scorep-omp/omp_critical/traces.otf2",
        "acquisitions_after_a_release",
        "on = \"event\"\nkinds = [\"ThreadAcquireLock\"]\nwhen = \"exists(E.last_release)\"\n\
         severity = \"1\"\nat = \"E\"\n",
    );
    assert_eq!(total(&a, "acquisitions_after_a_release"), 11.0);
    // the release is of the same lock, earlier, on another thread or the same one
    let (_, _, a) = with_rule(
        "scorep-omp/omp_critical/traces.otf2",
        "release_before_acquire",
        "on = \"event\"\nkinds = [\"ThreadAcquireLock\"]\n\
         when = \"E.last_release.kind == 'ThreadReleaseLock' && E.last_release.time <= E.time\"\n\
         severity = \"1\"\nat = \"E\"\n",
    );
    assert_eq!(total(&a, "release_before_acquire"), 11.0);
    // a field that only acquisitions have
    let (_, _, a) = with_rule(
        "scorep/ls/traces.otf2",
        "sends_with_release",
        "on = \"event\"\nkinds = [\"MpiSend\"]\nwhen = \"exists(E.last_release)\"\n\
         severity = \"1\"\nat = \"E\"\n",
    );
    assert_eq!(total(&a, "sends_with_release"), 0.0);
}

#[test]
fn callpath_bindings_of_idle_threads() {
    // omp_fork: the master runs main/serial_work (50 × 10 ms) alone; each of the 3 workers
    // owes the master's time there (§3.5.3), where it has no time of its own
    let (t, r, a) = with_rule(
        "scorep-omp/omp_fork/traces.otf2",
        "serial_owed",
        "on = \"callpath\"\nwhen = \"!master && !omp_subtree && time == 0\"\n\
         severity = \"master_time\"\n",
    );
    let v = values(&t, &r, &a, "serial_owed");
    let at_serial: Vec<f64> = v
        .iter()
        .filter(|x| x.0 == "main/serial_work")
        .map(|x| x.2)
        .collect();
    assert_eq!(at_serial.len(), 3, "{v:?}");
    assert!(
        at_serial.iter().all(|&x| (x - 0.504046).abs() < 1e-6),
        "{v:?}"
    );
    // inside a parallel region every team member's inclusive time equals the master's
    let (_, _, a) = with_rule(
        "scorep-omp/omp_fork/traces.otf2",
        "team_gap",
        "on = \"callpath\"\nwhen = \"omp_root && !master\"\nseverity = \"abs(master_incl - incl)\"\n",
    );
    assert!(total(&a, "team_gap") < 1e-9);
    // without OpenMP every location is its own master
    let (_, _, a) = with_rule(
        "scorep/ls/traces.otf2",
        "non_masters",
        "on = \"callpath\"\nwhen = \"!master || omp_subtree || omp_root\"\nseverity = \"1\"\n",
    );
    assert_eq!(total(&a, "non_masters"), 0.0);
}
