//! Identity: entity references and the capture context shared by records.

use std::num::NonZeroU64;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::fields::{Fields, expect_object};
use crate::schema::read;
use crate::{NonEmptyString, RecordMember, ValidationError};

/// An ID scoped to the producer that minted it within a run.
///
/// Two producers may both have an iteration `"7"`; they are different
/// entities. Ordering is by `(producer_id, id)`, the order every sorted list
/// in tally's output uses.
///
/// ```
/// use tally_core::EntityRef;
/// let step = EntityRef::new("engine-0", "step-7").unwrap();
/// assert_eq!(step.id(), "step-7");
/// assert!(EntityRef::new("", "step-7").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntityRef {
    producer_id: NonEmptyString,
    id: NonEmptyString,
}

impl EntityRef {
    /// Validates both parts.
    pub fn new(producer_id: impl Into<String>, id: impl Into<String>) -> Result<Self, ValidationError> {
        Ok(Self {
            producer_id: NonEmptyString::for_field(producer_id, "producer_id")?,
            id: NonEmptyString::for_field(id, "id")?,
        })
    }

    /// From already validated parts.
    pub fn from_parts(producer_id: NonEmptyString, id: NonEmptyString) -> Self {
        Self { producer_id, id }
    }

    /// The producer that minted the ID.
    pub fn producer_id(&self) -> &str {
        &self.producer_id
    }

    /// The ID within its producer.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Parses `{"producer_id": ..., "id": ...}`; `field` names the reference
    /// in errors (e.g. `iteration_ref`).
    pub fn from_json(value: Value, field: &'static str) -> Result<Self, ValidationError> {
        let map = match value {
            Value::Object(map) => map,
            _ => return Err(ValidationError::new(field, format!("{field} must be an object"))),
        };
        let mut fields = Fields::new(map);
        let reference =
            Self { producer_id: fields.required_string("producer_id")?, id: fields.required_string("id")? };
        fields.finish(field)?;
        Ok(reference)
    }

    /// The JSON object stormlog writes for a reference.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("producer_id".into(), Value::String(self.producer_id.to_string()));
        map.insert("id".into(), Value::String(self.id.to_string()));
        Value::Object(map)
    }
}

impl Serialize for EntityRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EntityRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(value, "ref").map_err(serde::de::Error::custom)
    }
}

/// Declares a closed enum of strings as stormlog and vertebrae write them:
/// the enum (`Debug`, `Clone`, `Copy`, `PartialEq`, `Eq`, `PartialOrd`,
/// `Ord`, `Hash`), `ALL`, `as_str`, `parse` and `FromStr` (rejecting any
/// other string with a [`ValidationError`] on `field` with `message`),
/// `Display`, and serde as that string. One macro for every such enum of
/// the workspace, so that they behave alike.
///
/// ```
/// tally_core::string_enum!(
///     /// A colour.
///     Colour, "colour", "colour must be red or blue", {
///         /// Red.
///         Red = "red",
///         /// Blue.
///         Blue = "blue",
///     }
/// );
/// assert_eq!(Colour::parse("blue"), Ok(Colour::Blue));
/// assert_eq!("red".parse::<Colour>().map(Colour::as_str), Ok("red"));
/// assert_eq!(Colour::parse("green").unwrap_err().to_string(), "colour must be red or blue");
/// ```
#[macro_export]
macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident, $field:literal, $message:literal, { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The spelling used in JSON.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }

            /// Parses the JSON spelling.
            pub fn parse(text: &str) -> ::std::result::Result<Self, $crate::ValidationError> {
                match text {
                    $($text => Ok(Self::$variant),)+
                    _ => Err($crate::ValidationError::new($field, $message)),
                }
            }

            #[allow(dead_code, reason = "used by the record parser for some enums only")]
            pub(crate) fn from_index(index: usize) -> Self {
                Self::ALL[index]
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::ValidationError;
            fn from_str(text: &str) -> ::std::result::Result<Self, $crate::ValidationError> {
                Self::parse(text)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::__serde::Serialize for $name {
            fn serialize<S: $crate::__serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                let text = <::std::string::String as $crate::__serde::Deserialize>::deserialize(deserializer)?;
                Self::parse(&text).map_err(<D::Error as $crate::__serde::de::Error>::custom)
            }
        }
    };
}
pub(crate) use string_enum;

string_enum!(
    /// What kind of clock a timestamp was read from.
    ClockKind, "clock_kind", "clock_kind must be monotonic, wall, or device", {
        /// A host monotonic clock: differences are durations.
        Monotonic = "monotonic",
        /// A wall clock: may jump, so differences are not durations.
        Wall = "wall",
        /// A device's own clock (GPU timestamps).
        Device = "device",
    }
);

string_enum!(
    /// How the evidence was collected.
    CollectionMode, "collection_mode", "collection_mode must be active, passive, or imported", {
        /// The collector drove the workload.
        Active = "active",
        /// The collector watched a workload it did not drive.
        Passive = "passive",
        /// Read from a trace or log after the fact.
        Imported = "imported",
    }
);

string_enum!(
    /// How much a value can be trusted.
    Provenance, "provenance", "provenance must be observed, reported, or estimated", {
        /// Measured by the producer.
        Observed = "observed",
        /// Reported by a component the producer trusts.
        Reported = "reported",
        /// Derived by a model, not measured.
        Estimated = "estimated",
    }
);

/// Capture identity and evidence quality shared by the records one producer
/// emits in one session.
///
/// Every field's own rule lives in its type, so the fields are public.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CorrelationContext {
    /// The run all records of one artifact belong to.
    pub run_id: NonEmptyString,
    /// One capture session of a producer.
    pub session_id: NonEmptyString,
    /// The component that emitted the record.
    pub producer_id: NonEmptyString,
    /// The tool or integration that wrote the record.
    pub source: NonEmptyString,
    /// The clock the record's timestamps were read from.
    pub clock_domain: NonEmptyString,
    /// What kind of clock `clock_domain` is.
    pub clock_kind: ClockKind,
    /// How the evidence was collected.
    pub collection_mode: CollectionMode,
    /// How far the values can be trusted.
    pub provenance: Provenance,
    /// Version of `source`.
    pub source_version: Option<NonEmptyString>,
    /// Serving engine, e.g. `vllm`.
    pub engine: Option<NonEmptyString>,
    /// Version of `engine`.
    pub engine_version: Option<NonEmptyString>,
    /// Compute backend, e.g. `cuda`.
    pub backend: Option<NonEmptyString>,
    /// Version of `backend`.
    pub backend_version: Option<NonEmptyString>,
    /// Host name.
    pub host: Option<NonEmptyString>,
    /// Process ID.
    pub pid: Option<u64>,
    /// The device whose clock timed GPU activity; needed for GPU accounting.
    pub device_uuid: Option<NonEmptyString>,
    /// Distributed rank.
    pub rank: Option<u64>,
    /// Rank within the host.
    pub local_rank: Option<u64>,
    /// Number of ranks; at least one.
    pub world_size: Option<NonZeroU64>,
}

/// Field names in stormlog's declaration order.
pub(crate) const CONTEXT_FIELDS: [&str; 19] = [
    "run_id",
    "session_id",
    "producer_id",
    "source",
    "clock_domain",
    "clock_kind",
    "collection_mode",
    "provenance",
    "source_version",
    "engine",
    "engine_version",
    "backend",
    "backend_version",
    "host",
    "pid",
    "device_uuid",
    "rank",
    "local_rank",
    "world_size",
];

impl CorrelationContext {
    /// The field names, in stormlog's declaration order (the order of its
    /// constructor's parameters).
    pub const FIELD_NAMES: [&'static str; 19] = CONTEXT_FIELDS;

    /// A context with the required fields and no optional ones.
    #[allow(clippy::too_many_arguments, reason = "one argument per required field of the model")]
    pub fn new(
        run_id: NonEmptyString,
        session_id: NonEmptyString,
        producer_id: NonEmptyString,
        source: NonEmptyString,
        clock_domain: NonEmptyString,
        clock_kind: ClockKind,
        collection_mode: CollectionMode,
        provenance: Provenance,
    ) -> Self {
        Self {
            run_id,
            session_id,
            producer_id,
            source,
            clock_domain,
            clock_kind,
            collection_mode,
            provenance,
            source_version: None,
            engine: None,
            engine_version: None,
            backend: None,
            backend_version: None,
            host: None,
            pid: None,
            device_uuid: None,
            rank: None,
            local_rank: None,
            world_size: None,
        }
    }

    /// The device whose GPU activity this context's clock can measure: its
    /// UUID, when the context names a device and its clock is monotonic
    /// or a device clock (stormlog never measures on a wall clock).
    pub fn measured_device(&self) -> Option<&str> {
        self.device_uuid
            .as_deref()
            .filter(|_| matches!(self.clock_kind, ClockKind::Monotonic | ClockKind::Device))
    }

    /// Parses and validates a context object.
    pub fn from_json(value: Value) -> Result<Self, ValidationError> {
        let mut fields = Fields::new(expect_object(value, "context")?);
        let context = Self {
            run_id: fields.required_string("run_id")?,
            session_id: fields.required_string("session_id")?,
            producer_id: fields.required_string("producer_id")?,
            source: fields.required_string("source")?,
            clock_domain: fields.required_string("clock_domain")?,
            clock_kind: parse_choice(&mut fields, "clock_kind", ClockKind::parse)?,
            collection_mode: parse_choice(&mut fields, "collection_mode", CollectionMode::parse)?,
            provenance: parse_choice(&mut fields, "provenance", Provenance::parse)?,
            source_version: fields.optional_string("source_version")?,
            engine: fields.optional_string("engine")?,
            engine_version: fields.optional_string("engine_version")?,
            backend: fields.optional_string("backend")?,
            backend_version: fields.optional_string("backend_version")?,
            host: fields.optional_string("host")?,
            pid: fields.optional_u64("pid")?,
            device_uuid: fields.optional_string("device_uuid")?,
            rank: fields.optional_u64("rank")?,
            local_rank: fields.optional_u64("local_rank")?,
            world_size: match fields.optional_u64("world_size")? {
                None => None,
                Some(size) => Some(
                    NonZeroU64::new(size)
                        .ok_or_else(|| ValidationError::new("world_size", "world_size must be >= 1"))?,
                ),
            },
        };
        fields.finish("context")?;
        Ok(context)
    }

    /// The JSON object stormlog writes (`dataclasses.asdict`): every field,
    /// `null` where absent.
    pub fn to_json(&self) -> Value {
        let values = [
            read!(Text, self.run_id),
            read!(Text, self.session_id),
            read!(Text, self.producer_id),
            read!(Text, self.source),
            read!(Text, self.clock_domain),
            read!(Text, self.clock_kind),
            read!(Text, self.collection_mode),
            read!(Text, self.provenance),
            read!(OptionalText, self.source_version),
            read!(OptionalText, self.engine),
            read!(OptionalText, self.engine_version),
            read!(OptionalText, self.backend),
            read!(OptionalText, self.backend_version),
            read!(OptionalText, self.host),
            read!(OptionalCount, self.pid),
            read!(OptionalText, self.device_uuid),
            read!(OptionalCount, self.rank),
            read!(OptionalCount, self.local_rank),
            read!(OptionalCount, self.world_size.map(NonZeroU64::get)),
        ];
        Value::Object(
            CONTEXT_FIELDS
                .iter()
                .map(|name| name.to_string())
                .zip(values.map(RecordMember::to_json))
                .collect(),
        )
    }
}

fn parse_choice<T>(
    fields: &mut Fields,
    name: &'static str,
    parse: fn(&str) -> Result<T, ValidationError>,
) -> Result<T, ValidationError> {
    match fields.take(name) {
        None => Err(ValidationError::new(name, format!("missing required field {name}"))),
        Some(Value::String(text)) => parse(&text),
        Some(_) => parse(""),
    }
}

impl Serialize for CorrelationContext {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CorrelationContext {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::from_json(Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}
