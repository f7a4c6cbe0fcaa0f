//! The generated OTF2 tables (src/formats/otf2/schema.rs, src/model/event_kind.rs) agree with
//! the spec's machine-readable record list, ../shared/spec/otf2_records.json.

mod common;

use perfexpert::formats::otf2::schema;
use perfexpert::formats::otf2::wire::{RecordSpec, Wire};
use perfexpert::model::EventKind;
use serde_json::Value;

fn wire(name: &str) -> Wire {
    match name {
        "uint8" => Wire::U8,
        "uint32c" => Wire::U32c,
        "uint64c" => Wire::U64c,
        "int64c" => Wire::I64c,
        "uint64_fixed" => Wire::U64f,
        "double" => Wire::F64,
        "string" => Wire::Str,
        "attribute_value" => Wire::AttrValue,
        "metric_value" => Wire::MetricValue,
        "id_map" => Wire::IdMap,
        other => panic!("unknown wire type {other}"),
    }
}

fn compare(ours: &[RecordSpec], theirs: &Value) {
    let theirs = theirs.as_array().unwrap();
    assert_eq!(ours.len(), theirs.len());
    for (o, t) in ours.iter().zip(theirs) {
        assert_eq!(o.name, t["name"].as_str().unwrap());
        assert_eq!(o.id as u64, t["id"].as_u64().unwrap(), "{}", o.name);
        assert_eq!(o.length_prefixed, t["length_prefixed"].as_bool().unwrap());
        let tf = t["fields"].as_array().unwrap();
        assert_eq!(o.fields.len(), tf.len(), "{}", o.name);
        for (of, f) in o.fields.iter().zip(tf) {
            assert_eq!(of.name, f["name"].as_str().unwrap(), "{}", o.name);
            assert_eq!(
                of.wire,
                wire(f["type"].as_str().unwrap()),
                "{}.{}",
                o.name,
                of.name
            );
            let since = format!("{}.{}", of.since.major, of.since.minor);
            assert_eq!(
                since,
                f["since"].as_str().unwrap(),
                "{}.{}",
                o.name,
                of.name
            );
            assert_eq!(of.mapped_by.is_some(), f.get("mapped_by").is_some());
            assert_eq!(of.count_field.is_some(), f.get("count_field").is_some());
        }
    }
}

#[test]
fn generated_tables_match_the_spec() {
    let Some(shared) = common::shared() else {
        return;
    };
    let text = std::fs::read_to_string(shared.join("spec/otf2_records.json")).unwrap();
    let spec: Value = serde_json::from_str(&text).unwrap();
    compare(schema::DEFINITIONS, &spec["definitions"]);
    compare(schema::LOCAL_DEFINITIONS, &spec["local_definitions"]);
    compare(schema::EVENTS, &spec["events"]);
    for e in spec["events"].as_array().unwrap() {
        let k = EventKind::from_otf2_id(e["id"].as_u64().unwrap() as u8).unwrap();
        assert_eq!(k.name(), e["name"].as_str().unwrap());
    }
    assert_eq!(
        EventKind::ALL.len(),
        spec["events"].as_array().unwrap().len() + 1
    );
}

#[test]
fn print_names_follow_otf2_print() {
    assert_eq!(EventKind::MpiIrecvRequest.print_name(), "MPI_IRECV_REQUEST");
    assert_eq!(
        EventKind::ParameterUnsignedInt.print_name(),
        "PARAMETER_UINT64"
    );
    assert_eq!(
        EventKind::MpiCollectiveBegin.print_name(),
        "MPI_COLLECTIVE_BEGIN"
    );
}
