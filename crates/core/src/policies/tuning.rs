//! Policy parameters set by name.
//!
//! A policy spec is a registered name, optionally followed by settings:
//! `NAME:KEY=VALUE:KEY=VALUE`, e.g. `hybridtier:momentum_threshold=5` or
//! `tierkit:ledger.memory_ticks=40`. A key names a field of the policy's `Params`
//! struct, a nested one by its dotted path. A value is JSON (`5`, `0.25`, `true`,
//! `{"hz": 1000}`), or a bare word for a field that holds text (an enum's variant, such
//! as `mode=hwt-driven`). Settings apply in order over the registered defaults; a key
//! that names no parameter and a value of the wrong type are refused by name (the error
//! lists the parameters there are), and the policy's constructor then checks ranges as
//! for any `Params`. For a `+colloid` policy, keys under `colloid.` set Colloid's own
//! parameters.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::ParamError;

/// One `KEY=VALUE` of a spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting<'a> {
    /// The parameter's dotted path.
    pub key: &'a str,
    /// Its value as written.
    pub value: &'a str,
}

/// A policy spec split into the policy's name and its settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec<'a> {
    /// The policy's name (with `+colloid` where given).
    pub name: &'a str,
    /// The settings, in order.
    pub settings: Vec<Setting<'a>>,
}

impl<'a> Spec<'a> {
    /// Splits `spec` at each `:` that starts a `KEY=` (so a JSON value may hold `:`).
    pub fn parse(spec: &'a str) -> Result<Self, ParamError> {
        let Some(colon) = spec.find(':') else { return Ok(Self { name: spec, settings: Vec::new() }) };
        let mut cuts: Vec<usize> =
            spec.match_indices(':').map(|(i, _)| i).filter(|&i| starts_key(&spec[i + 1..])).collect();
        if cuts.first() != Some(&colon) {
            return Err(bad_settings(&spec[colon + 1..]));
        }
        cuts.push(spec.len());
        let settings = cuts
            .windows(2)
            .map(|w| {
                let (key, value) = spec[w[0] + 1..w[1]].split_once('=').unwrap_or_default();
                Setting { key, value }
            })
            .collect();
        Ok(Self { name: &spec[..colon], settings })
    }
}

/// The error for `text` where settings were expected.
fn bad_settings(text: &str) -> ParamError {
    let expected = "KEY=VALUE settings after the policy's name, each after a `:`".to_string();
    ParamError::named("settings".to_string(), format!("{text:?}"), expected)
}

/// Whether `text` begins with `KEY=`, a key being a dotted path of identifiers.
fn starts_key(text: &str) -> bool {
    let Some((key, _)) = text.split_once('=') else { return false };
    !key.is_empty()
        && key.split('.').all(|part| {
            part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// `P`'s defaults with `settings` applied in order.
pub fn tuned<P: Default + Serialize + DeserializeOwned>(settings: &[Setting<'_>]) -> Result<P, ParamError> {
    apply(P::default(), settings)
}

/// `base` with `settings` applied in order; see the module documentation.
pub fn apply<P: Serialize + DeserializeOwned>(base: P, settings: &[Setting<'_>]) -> Result<P, ParamError> {
    let mut params = base;
    for s in settings {
        let mut tree = serde_json::to_value(&params).expect("policy parameters serialize to JSON");
        let slot = slot(&mut tree, *s)?;
        let was = kind(slot);
        *slot = value_for(slot, s.value);
        params = serde_json::from_value(tree).map_err(|e| {
            ParamError::named(s.key.to_string(), s.value, format!("{was} ({})", first_clause(&e.to_string())))
        })?;
    }
    Ok(params)
}

/// Refuses any setting: for a policy that has no parameters (named `policy`).
pub fn none(policy: &str, settings: &[Setting<'_>]) -> Result<(), ParamError> {
    match settings.first() {
        Some(s) => {
            Err(ParamError::named(s.key.to_string(), s.value, format!("no setting: {policy} has no parameters")))
        }
        None => Ok(()),
    }
}

/// The value at `setting`'s key, which must exist.
fn slot<'t>(tree: &'t mut Value, setting: Setting<'_>) -> Result<&'t mut Value, ParamError> {
    let mut at = tree;
    let mut path = String::new();
    for part in setting.key.split('.') {
        let Value::Object(map) = at else {
            let why = format!("a parameter, but {path} is a single value, with nothing below it");
            return Err(ParamError::named(setting.key.to_string(), setting.value, why));
        };
        if !map.contains_key(part) {
            let known: Vec<String> =
                map.keys().map(|k| if path.is_empty() { k.clone() } else { format!("{path}.{k}") }).collect();
            let why = format!("a parameter: one of {}", known.join(", "));
            return Err(ParamError::named(setting.key.to_string(), setting.value, why));
        }
        path = if path.is_empty() { part.to_string() } else { format!("{path}.{part}") };
        at = map.get_mut(part).expect("checked above");
    }
    Ok(at)
}

/// `raw` as the value of a slot holding `current`: JSON, or text where JSON does not
/// parse (a bare word), so that a wrong type is reported by the deserializer.
fn value_for(current: &Value, raw: &str) -> Value {
    match (current, serde_json::from_str::<Value>(raw)) {
        (Value::String(_), Ok(v @ Value::String(_))) => v,
        (Value::String(_), _) => Value::String(raw.to_string()),
        (_, Ok(v)) => v,
        (_, Err(_)) => Value::String(raw.to_string()),
    }
}

/// What a value of the kind of `v` is, for an error.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "true or false",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "a whole number",
        Value::String(_) => "one of the words the parameter takes",
        Value::Array(_) => "a JSON array",
        Value::Object(_) => "a JSON object",
        Value::Null => "a JSON value",
    }
}

/// The part of a serde message before its position, which means nothing here.
fn first_clause(message: &str) -> &str {
    message.split(" at line ").next().unwrap_or(message)
}

/// One parameter, for `tierkit list --params`.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDoc {
    /// Its dotted path.
    pub key: String,
    /// Its default, as JSON.
    pub default: Value,
    /// Its doc comment: what it is and the source of its default.
    pub about: String,
}

/// Every parameter of `P` with `defaults`' values, nested structs flattened to their
/// fields' dotted paths.
pub fn describe<P: Serialize + JsonSchema>(defaults: &P) -> Vec<ParamDoc> {
    let schema = schemars::schema_for!(P);
    let root = schema.as_value();
    let values = serde_json::to_value(defaults).expect("policy parameters serialize to JSON");
    let mut out = Vec::new();
    walk(root, root, &values, "", &mut out);
    out
}

/// [`describe`] for `P`'s defaults.
pub fn describe_default<P: Default + Serialize + JsonSchema>() -> Vec<ParamDoc> {
    describe(&P::default())
}

fn walk(root: &Value, schema: &Value, values: &Value, prefix: &str, out: &mut Vec<ParamDoc>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, prop) in props {
        let key = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        let value = values.get(name).cloned().unwrap_or(Value::Null);
        let about = prop.get("description").and_then(Value::as_str).unwrap_or("").to_string();
        match nested(root, prop) {
            Some(inner) if value.is_object() => walk(root, inner, &value, &key, out),
            _ => out.push(ParamDoc { key, default: value, about }),
        }
    }
}

/// The struct schema `prop` refers to (directly, or as an `Option`'s one non-null
/// alternative), if it is one.
fn nested<'s>(root: &'s Value, prop: &'s Value) -> Option<&'s Value> {
    let target = match prop.get("$ref") {
        Some(r) => r,
        None => prop.get("anyOf")?.as_array()?.iter().find_map(|alt| alt.get("$ref"))?,
    };
    let name = target.as_str()?.strip_prefix("#/$defs/")?;
    let def = root.get("$defs")?.get(name)?;
    def.get("properties").is_some().then_some(def)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::{M5Mode, M5Params, TierkitParams};

    fn spec(s: &str) -> Spec<'_> {
        Spec::parse(s).unwrap()
    }

    #[test]
    fn a_spec_splits_at_each_key_and_keeps_json_colons_in_values() {
        assert_eq!(spec("tierkit"), Spec { name: "tierkit", settings: vec![] });
        let s = spec("hemem+colloid:hot_threshold=8:colloid.delta=0.1");
        assert_eq!(s.name, "hemem+colloid");
        assert_eq!(
            s.settings,
            [Setting { key: "hot_threshold", value: "8" }, Setting { key: "colloid.delta", value: "0.1" }]
        );
        let s = spec(r#"lru:rate={"hz":1000}"#);
        assert_eq!(s.settings, [Setting { key: "rate", value: r#"{"hz":1000}"# }]);
        for bad in ["tierkit:", "tierkit:5", "tierkit:=5", "tierkit:x y=1"] {
            assert!(Spec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn settings_reach_top_level_nested_and_enum_fields() {
        let p: TierkitParams =
            tuned(&spec("t:sample_rate_hz=5000:ledger.memory_ticks=40:streams.min_run=9").settings).unwrap();
        assert_eq!(p.sample_rate_hz, 5000.0);
        assert_eq!(p.ledger.memory_ticks, 40);
        assert_eq!(p.streams.map(|s| s.min_run), Some(9));
        assert_eq!(p.cpu_budget, TierkitParams::default().cpu_budget, "the rest stays at its default");
        let m: M5Params = tuned(&spec("m5:mode=hwt-driven").settings).unwrap();
        assert_eq!(m.mode, M5Mode::HwtDriven);
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_refused_by_name() {
        let e = tuned::<TierkitParams>(&spec("t:ledger.memory_tick=4").settings).unwrap_err();
        assert_eq!(e.param, "ledger.memory_tick");
        assert!(e.expected.contains("ledger.memory_ticks"), "{e}");
        let e = tuned::<TierkitParams>(&spec("t:sample_rate_hz=fast").settings).unwrap_err();
        assert_eq!((e.param.as_ref(), e.value.as_str()), ("sample_rate_hz", "fast"));
        assert!(e.expected.starts_with("a number"), "{e}");
        let e = tuned::<TierkitParams>(&spec("t:ledger.memory_ticks=-1").settings).unwrap_err();
        assert!(e.expected.starts_with("a whole number"), "{e}");
        let e = tuned::<TierkitParams>(&spec("t:sample_rate_hz.x=1").settings).unwrap_err();
        assert!(e.expected.contains("single value"), "{e}");
        let e = tuned::<M5Params>(&spec("m5:mode=sometimes").settings).unwrap_err();
        assert!(e.expected.contains("unknown variant"), "{e}");
    }

    #[test]
    fn describe_lists_every_leaf_with_its_default_and_doc() {
        let docs = describe_default::<TierkitParams>();
        let get = |k: &str| docs.iter().find(|d| d.key == k).unwrap_or_else(|| panic!("{k} missing"));
        assert_eq!(get("ledger.memory_ticks").default, Value::from(20));
        assert!(get("ledger.memory_ticks").about.contains("Ticks a move stays on the books"));
        assert_eq!(get("sample_rate_hz").default, Value::from(TierkitParams::default().sample_rate_hz));
        assert!(docs.iter().all(|d| !d.default.is_object()), "nested structs are flattened");
        assert!(docs.iter().all(|d| !d.about.is_empty()), "every parameter has a doc comment");
    }
}
