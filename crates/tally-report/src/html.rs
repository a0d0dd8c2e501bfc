//! HTML text: escaping, the embedded JSON, and the figure tables whose
//! cells name the JSON value they show (the convention of the crate docs).

use std::fmt::Write as _;

use serde::Serialize;

/// `text` with `&`, `<`, `>`, `"` and `'` as character references: safe
/// in element content and in quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// `value` as compact JSON fit for the content of a `<script>` element:
/// every `<` written `\u003c` (it can only stand inside a JSON string,
/// where the escape means the same character), so no `</script>` or
/// `<!--` can end or change the element, and the text parses to the same
/// value.
pub fn script_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let text = serde_json::to_string(value)?;
    Ok(if text.contains('<') { text.replace('<', "\\u003c") } else { text })
}

/// `text` cut to at most `most` characters, an ellipsis marking the cut:
/// kernel names run to thousands of characters (C++ templates).
pub fn shorten(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_owned();
    }
    let head: String = text.chars().take(most.saturating_sub(1)).collect();
    format!("{head}…")
}

/// A cell of a figure table.
pub enum Cell {
    /// Text of no JSON value (a label).
    Label(String),
    /// Text with a sort key, of no JSON value (a figure derived for the
    /// page, not in the embedded JSON).
    Derived { text: String, value: String },
    /// A JSON value shown as `text`: `pointer` is its JSON Pointer in the
    /// embedded data, `value` its JSON text there.
    Json { pointer: String, value: String, text: String },
}

impl Cell {
    /// A label.
    pub fn label(text: impl Into<String>) -> Self {
        Cell::Label(text.into())
    }

    /// A JSON value at `pointer`, shown as `text`.
    pub fn json<T: Serialize + ?Sized>(
        pointer: impl Into<String>,
        value: &T,
        text: impl Into<String>,
    ) -> Self {
        // Numbers, strings, booleans and null always serialize.
        let value = serde_json::to_string(value).unwrap_or_default();
        // A string's value is its text, not its JSON spelling.
        let value = match serde_json::from_str::<String>(&value) {
            Ok(string) => string,
            Err(_) => value,
        };
        Cell::Json { pointer: pointer.into(), value, text: text.into() }
    }

    /// A nanosecond figure at `pointer`, shown in a readable unit.
    pub fn time(pointer: impl Into<String>, nanoseconds: impl Into<u128>) -> Self {
        let nanoseconds = nanoseconds.into();
        Cell::json(pointer, &nanoseconds, crate::units::readable_ns(nanoseconds))
    }

    /// A count at `pointer`.
    pub fn count(pointer: impl Into<String>, count: u64) -> Self {
        Cell::json(pointer, &count, count.to_string())
    }

    /// A derived text with its sort key.
    pub fn derived(text: impl Into<String>, value: impl ToString) -> Self {
        Cell::Derived { text: text.into(), value: value.to_string() }
    }
}

/// A `<table class="tally-table">` being written.
pub struct Table {
    html: String,
    rows: usize,
}

impl Table {
    /// A table named `name` (its `data-table`), with a caption and column
    /// headers; `sortable` tables sort by a click on a header.
    pub fn new(name: &str, caption: &str, headers: &[&str], sortable: bool) -> Self {
        let mut html = String::new();
        let class = if sortable { "tally-table sortable" } else { "tally-table" };
        let _ = write!(
            html,
            "<div class=\"table-scroll\"><table class=\"{class}\" data-table=\"{}\"><caption>{}</caption><thead><tr>",
            escape(name),
            escape(caption)
        );
        for header in headers {
            let _ = write!(html, "<th scope=\"col\">{}</th>", escape(header));
        }
        html.push_str("</tr></thead><tbody>");
        Self { html, rows: 0 }
    }

    /// One row; `pointer`, when the row is one JSON object (a kernel, a
    /// stream), is that object's pointer (`data-key` of the `<tr>`).
    pub fn row(&mut self, pointer: Option<&str>, cells: Vec<Cell>) {
        match pointer {
            Some(pointer) => {
                let _ = write!(self.html, "<tr data-key=\"{}\">", escape(pointer));
            }
            None => self.html.push_str("<tr>"),
        }
        for (index, cell) in cells.into_iter().enumerate() {
            let tag = if index == 0 { "th scope=\"row\"" } else { "td" };
            let close = if index == 0 { "th" } else { "td" };
            match cell {
                Cell::Label(text) => {
                    let _ = write!(self.html, "<{tag}>{}</{close}>", escape(&text));
                }
                Cell::Derived { text, value } => {
                    let _ = write!(
                        self.html,
                        "<{tag} data-value=\"{}\">{}</{close}>",
                        escape(&value),
                        escape(&text)
                    );
                }
                Cell::Json { pointer, value, text } => {
                    // A shortened text (a long kernel name) has the whole
                    // value as its tooltip.
                    let title = if text.ends_with('…') && text != value {
                        format!(" title=\"{}\"", escape(&value))
                    } else {
                        String::new()
                    };
                    let _ = write!(
                        self.html,
                        "<{tag} data-key=\"{}\" data-value=\"{}\"{title}>{}</{close}>",
                        escape(&pointer),
                        escape(&value),
                        escape(&text)
                    );
                }
            }
        }
        self.html.push_str("</tr>");
        self.rows += 1;
    }

    /// The table's HTML.
    pub fn finish(mut self) -> String {
        self.html.push_str("</tbody></table></div>");
        self.html
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_content_and_attributes() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert_eq!(escape("void k<float>(x)"), "void k&lt;float&gt;(x)");
    }

    #[test]
    fn embedded_json_cannot_close_its_script_and_parses_the_same() {
        let value = serde_json::json!({"name": "</script><!-- k<T>", "n": 1});
        let text = script_json(&value).expect("serializes");
        assert!(!text.contains('<'), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, value);
    }

    #[test]
    fn long_names_are_cut_with_an_ellipsis_and_keep_their_value() {
        assert_eq!(shorten("abcdef", 6), "abcdef");
        assert_eq!(shorten("abcdefg", 6), "abcde…");
        let mut table = Table::new("t", "caption", &["kernel"], false);
        table.row(None, vec![Cell::json("/k", "abcdefg", shorten("abcdefg", 6))]);
        assert!(table.finish().contains("data-value=\"abcdefg\" title=\"abcdefg\">abcde…<"));
    }

    #[test]
    fn cells_carry_their_pointer_and_json_value() {
        let mut table = Table::new("t", "caption", &["a", "b", "c"], true);
        table.row(
            Some("/devices/0/kernels/0"),
            vec![
                Cell::json("/devices/0/kernels/0/name", "k<1>", "k<1>"),
                Cell::time("/devices/0/kernels/0/busy_ns", 1_500u64),
                Cell::derived("7 ns", 7),
            ],
        );
        let html = table.finish();
        assert!(html.contains("class=\"tally-table sortable\""));
        assert!(html.contains(
            "<th scope=\"row\" data-key=\"/devices/0/kernels/0/name\" data-value=\"k&lt;1&gt;\">k&lt;1&gt;</th>"
        ));
        assert!(
            html.contains("<td data-key=\"/devices/0/kernels/0/busy_ns\" data-value=\"1500\">1.50 µs</td>")
        );
        assert!(html.contains("<td data-value=\"7\">7 ns</td>"));
    }
}
