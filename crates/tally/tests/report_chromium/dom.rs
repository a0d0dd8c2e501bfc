//! A tree of the DOM Chromium serializes (`outerHTML`): every attribute
//! double-quoted, every non-void element closed, `&amp;`, `&lt;`, `&gt;`,
//! `&quot;` and `&nbsp;` escaped; `<script>` and `<style>` hold raw text.
//! Enough to read the report's tables and its embedded data without an
//! HTML parser crate.

/// One element, its attributes in order and its children.
#[derive(Debug)]
pub struct Element {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub children: Vec<Node>,
}

/// A child: an element or text.
#[derive(Debug)]
pub enum Node {
    Element(Element),
    Text(String),
}

const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
    "param",
];

impl Element {
    /// The value of attribute `name`, if set.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// Whether its `class` lists `class`.
    pub fn has_class(&self, class: &str) -> bool {
        self.attribute("class").is_some_and(|classes| classes.split_whitespace().any(|word| word == class))
    }

    /// Its text, descendants' included.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for child in &self.children {
            match child {
                Node::Text(part) => text.push_str(part),
                Node::Element(element) => text.push_str(&element.text()),
            }
        }
        text
    }

    /// Every element below it (itself included) that `keep` accepts, in
    /// document order.
    pub fn find<'a>(&'a self, keep: &dyn Fn(&Element) -> bool, found: &mut Vec<&'a Element>) {
        if keep(self) {
            found.push(self);
        }
        for child in &self.children {
            if let Node::Element(element) = child {
                element.find(keep, found);
            }
        }
    }

    /// [`Element::find`], collected.
    pub fn all(&self, keep: &dyn Fn(&Element) -> bool) -> Vec<&Element> {
        let mut found = Vec::new();
        self.find(keep, &mut found);
        found
    }
}

/// Parses a serialized document into a root element named `#document`.
pub fn parse(html: &str) -> Result<Element, String> {
    let mut stack =
        vec![Element { name: "#document".to_owned(), attributes: Vec::new(), children: Vec::new() }];
    let mut at = 0;
    while at < html.len() {
        let rest = &html[at..];
        let Some(open) = rest.find('<') else {
            push_text(&mut stack, rest);
            break;
        };
        if open > 0 {
            push_text(&mut stack, &rest[..open]);
        }
        let tag = &rest[open..];
        if let Some(comment) = tag.strip_prefix("<!--") {
            let end = comment.find("-->").ok_or(format!("byte {at}: unclosed comment"))?;
            at += open + 4 + end + 3;
            continue;
        }
        let end = tag_end(tag).ok_or(format!("byte {}: unclosed tag", at + open))?;
        let inside = &tag[1..end];
        at += open + end + 1;
        if inside.starts_with('!') {
            continue;
        }
        if let Some(name) = inside.strip_prefix('/') {
            let name = name.trim().to_ascii_lowercase();
            if !stack.iter().skip(1).any(|element| element.name == name) {
                return Err(format!("byte {at}: </{name}> closes nothing"));
            }
            while let Some(element) = stack.pop() {
                let done = element.name == name;
                stack.last_mut().ok_or("the document closed")?.children.push(Node::Element(element));
                if done {
                    break;
                }
            }
            continue;
        }
        let (name, attributes) = tag_parts(inside).map_err(|why| format!("byte {at}: {why}"))?;
        let element = Element { name: name.clone(), attributes, children: Vec::new() };
        if VOID.contains(&name.as_str()) || inside.ends_with('/') {
            stack.last_mut().ok_or("the document closed")?.children.push(Node::Element(element));
        } else if name == "script" || name == "style" {
            let closing = format!("</{name}");
            let end = html[at..].find(&closing).ok_or(format!("byte {at}: unclosed <{name}>"))?;
            let mut element = element;
            element.children.push(Node::Text(html[at..at + end].to_owned()));
            at += end + html[at + end..].find('>').ok_or(format!("byte {at}: unclosed </{name}"))? + 1;
            stack.last_mut().ok_or("the document closed")?.children.push(Node::Element(element));
        } else {
            stack.push(element);
        }
    }
    while stack.len() > 1 {
        let element = stack.pop().ok_or("the document closed")?;
        stack.last_mut().ok_or("the document closed")?.children.push(Node::Element(element));
    }
    stack.pop().ok_or_else(|| "no document".to_owned())
}

fn push_text(stack: &mut [Element], text: &str) {
    if let Some(parent) = stack.last_mut() {
        parent.children.push(Node::Text(unescape(text)));
    }
}

/// The index of the `>` that ends the tag starting at `tag[0] == '<'`,
/// skipping quoted attribute values.
fn tag_end(tag: &str) -> Option<usize> {
    let mut quoted = false;
    for (index, character) in tag.char_indices() {
        match character {
            '"' => quoted = !quoted,
            '>' if !quoted => return Some(index),
            _ => {}
        }
    }
    None
}

fn tag_parts(inside: &str) -> Result<(String, Vec<(String, String)>), String> {
    let inside = inside.trim_end_matches('/');
    let name_end = inside.find(|c: char| c.is_whitespace()).unwrap_or(inside.len());
    let name = inside[..name_end].to_ascii_lowercase();
    let mut rest = inside[name_end..].trim_start();
    let mut attributes = Vec::new();
    while !rest.is_empty() {
        let key_end = rest.find(|c: char| c == '=' || c.is_whitespace()).unwrap_or(rest.len());
        let key = rest[..key_end].to_ascii_lowercase();
        rest = rest[key_end..].trim_start();
        let value = if let Some(after) = rest.strip_prefix('=') {
            let after = after.trim_start();
            let quoted = after.strip_prefix('"').ok_or(format!("<{name}>: attribute {key} is not quoted"))?;
            let close = quoted.find('"').ok_or(format!("<{name}>: attribute {key} is not closed"))?;
            rest = quoted[close + 1..].trim_start();
            unescape(&quoted[..close])
        } else {
            String::new()
        };
        attributes.push((key, value));
    }
    Ok((name, attributes))
}

/// Undoes the escapes Chromium's serializer writes (and numeric ones).
pub fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp..];
        let end = after.find(';').filter(|&end| end <= 10);
        let decoded = end.and_then(|end| match &after[1..end] {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some('\u{a0}'),
            entity => entity
                .strip_prefix("#x")
                .map(|hex| u32::from_str_radix(hex, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        });
        match (decoded, end) {
            (Some(character), Some(end)) => {
                out.push(character);
                rest = &after[end + 1..];
            }
            _ => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}
