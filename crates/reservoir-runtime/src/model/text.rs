//! The strings of a model file (column names, class names, a spike model's task options),
//! decoded through `deserialize_str`, and the spike model's task options stored as text.
//!
//! bincode's `deserialize_str` checks a string's declared length against the payload before it
//! copies the string out. Its `deserialize_string`, which `String` asks for, allocates the
//! declared length first, so a corrupt length of a few bytes asked for terabytes and aborted
//! the process.

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error, Visitor};

/// A string decoded through `deserialize_str`.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl Visitor<'_> for TextVisitor {
            type Value = Text;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: Error>(self, text: &str) -> Result<Text, E> {
                Ok(Text(text.to_owned()))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

/// One string (`#[serde(deserialize_with = "text::one")]`).
pub(crate) fn one<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Text::deserialize(deserializer).map(|text| text.0)
}

/// A list of strings (`#[serde(deserialize_with = "text::list")]`).
pub(crate) fn list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let texts = Vec::<Text>::deserialize(deserializer)?;
    Ok(texts.into_iter().map(|text| text.0).collect())
}

/// The task options are stored as their TOML text: the encoder inside them is an internally
/// tagged enum, which bincode (not self-describing) cannot decode directly.
pub(crate) mod options_as_toml {
    use serde::{de::Error as _, ser::Error as _, Deserializer, Serializer};

    use crate::config::SpikeClassificationOptions;

    pub fn serialize<S: Serializer>(
        options: &SpikeClassificationOptions,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let text = toml::to_string(options).map_err(S::Error::custom)?;
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<SpikeClassificationOptions, D::Error> {
        let text = super::one(d)?;
        toml::from_str(&text).map_err(D::Error::custom)
    }
}
