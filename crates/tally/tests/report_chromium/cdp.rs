//! Headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`): one browser per page opens it, and reports
//! every uncaught exception, console error or warning, error logged by the
//! browser (a failed load, a Content-Security-Policy refusal) and every
//! request the page made, then hands back its DOM after its scripts ran and
//! screenshots in light and dark colour schemes.
//!
//! Why the protocol and not `--screenshot` / `--dump-dom` with the log on
//! stderr: the stderr log prints `console.log` and `console.error` alike at
//! INFO and never prints a failed load, so a grep over it can miss errors or
//! flag harmless lines; the protocol names each event's kind. And one launch
//! gives the DOM, both screenshots and the events (about half a second).
//!
//! The browser reads commands from its fd 3 and writes answers on fd 4, each
//! a JSON message ended by a NUL byte. `sh` puts the child's stdin and
//! stdout on those descriptors (`3<&0 4>&1`), so no unsafe `pre_exec` is
//! needed.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::png::{Image, base64_decode};

/// How long one page may take, load and screenshots together: generous,
/// for a loaded CI machine (a fixture's report takes about half a second).
const PAGE_TIMEOUT: Duration = Duration::from_secs(90);

/// The Chromium to run: `TALLY_CHROMIUM`, else the first of Debian's,
/// Ubuntu's and Google's names found on `PATH`.
pub fn find_chromium() -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os("TALLY_CHROMIUM").filter(|value| !value.is_empty()) {
        let named = PathBuf::from(named);
        return if named.is_file() {
            Ok(named)
        } else {
            Err(format!("TALLY_CHROMIUM={} is not a file", named.display()))
        };
    }
    let names = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in names {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!(
        "no Chromium on PATH ({}; Debian's `chromium` package, which `cargo xtask test` installs, \
         or TALLY_CHROMIUM)",
        names.join(", ")
    ))
}

/// What [`Rendered::layout`] measures: how far the page runs past the
/// viewport's width, and every SVG text label drawn partly outside its
/// chart (cut off: an SVG clips what leaves it) or over another label.
const LAYOUT_PROBE: &str = r#"(() => {
  const root = document.documentElement;
  const name = t => (t.textContent || "").trim().slice(0, 60);
  const clipped = [], overlapping = [];
  for (const svg of document.querySelectorAll("svg")) {
    if (svg.parentNode.closest("svg")) continue;
    const box = svg.getBoundingClientRect();
    const texts = Array.from(svg.querySelectorAll("text")).filter(t => name(t) !== "");
    const rects = texts.map(t => t.getBoundingClientRect());
    rects.forEach((r, i) => {
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        clipped.push(name(texts[i]));
      for (let j = i + 1; j < rects.length; j++) {
        const o = rects[j];
        const w = Math.min(r.right, o.right) - Math.max(r.left, o.left);
        const h = Math.min(r.bottom, o.bottom) - Math.max(r.top, o.top);
        if (w > 2 && h > 2) overlapping.push(name(texts[i]) + " / " + name(texts[j]));
      }
    });
  }
  return {overflow_px: root.scrollWidth - root.clientWidth, clipped, overlapping};
})()"#;

/// What one page showed.
pub struct Rendered {
    /// [`LAYOUT_PROBE`] in the light scheme after load: `{overflow_px,
    /// clipped: [label], overlapping: ["label / label"]}`.
    pub layout: Value,
    /// `document.documentElement.outerHTML` after the page's scripts ran.
    pub dom: String,
    /// The viewport in the light colour scheme.
    pub light: Image,
    /// The viewport after a reload in the dark colour scheme, at half size.
    pub dark: Image,
    /// The PNG bytes of `light`, as Chromium wrote them.
    pub light_png: Vec<u8>,
    /// The PNG bytes of `dark`.
    pub dark_png: Vec<u8>,
    /// Exceptions, console errors and warnings, browser errors, in order.
    pub problems: Vec<String>,
    /// Every URL the page requested besides itself (`data:` ones aside).
    pub requests: Vec<String>,
}

/// Opens `page` in a fresh headless Chromium with a `width` x `height`
/// viewport and returns what it showed; `interact` (a JavaScript
/// expression, a reader's clicks) runs after the light screenshot and
/// before the DOM is read.
pub fn render(
    chromium: &Path,
    page: &Path,
    width: u32,
    height: u32,
    interact: &str,
) -> Result<Rendered, String> {
    let profile = tempfile::tempdir().map_err(|error| format!("profile directory: {error}"))?;
    let log = profile.path().join("chromium-stderr.log");
    let mut browser = Browser::launch(chromium, profile.path(), &log)?;
    let result = browser.render(page, width, height, interact);
    browser.close();
    result.map_err(|error| {
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
        format!("{error}\nChromium's stderr ends:\n{}", tail.join("\n"))
    })
}

struct Browser {
    child: Child,
    commands: ChildStdin,
    messages: Receiver<Result<Value, String>>,
    next_id: u64,
    deadline: Instant,
    session: Option<String>,
    /// Events that arrived while waiting for an answer, in order.
    events: Vec<Value>,
}

impl Browser {
    fn launch(chromium: &Path, profile: &Path, log: &Path) -> Result<Self, String> {
        let stderr = std::fs::File::create(log).map_err(|error| format!("{}: {error}", log.display()))?;
        let mut child = Command::new("sh")
            .args(["-c", r#"exec "$@" 3<&0 4>&1 </dev/null >/dev/null"#, "sh"])
            .arg(chromium)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", chromium.display()))?;
        let (Some(commands), Some(mut answers)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("Chromium's pipes were not opened".to_owned());
        };
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut chunk = [0_u8; 64 * 1024];
            loop {
                let read = match answers.read(&mut chunk) {
                    Ok(0) => {
                        let _ = sender.send(Err("Chromium closed its protocol pipe".to_owned()));
                        return;
                    }
                    Ok(read) => read,
                    Err(error) => {
                        let _ = sender.send(Err(format!("reading Chromium's protocol pipe: {error}")));
                        return;
                    }
                };
                pending.extend_from_slice(&chunk[..read]);
                while let Some(end) = pending.iter().position(|&byte| byte == 0) {
                    let message: Vec<u8> = pending.drain(..=end).collect();
                    let parsed = serde_json::from_slice(&message[..end])
                        .map_err(|error| format!("a protocol message is not JSON: {error}"));
                    if sender.send(parsed).is_err() {
                        return;
                    }
                }
            }
        });
        Ok(Browser {
            child,
            commands,
            messages,
            next_id: 0,
            deadline: Instant::now() + PAGE_TIMEOUT,
            session: None,
            events: Vec::new(),
        })
    }

    fn receive(&mut self) -> Result<Value, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match self.messages.recv_timeout(left) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => {
                Err(format!("Chromium did not answer within {} s", PAGE_TIMEOUT.as_secs()))
            }
            Err(RecvTimeoutError::Disconnected) => Err("Chromium's protocol reader stopped".to_owned()),
        }
    }

    /// Sends `method` (to the page's session once attached) and waits for
    /// its answer, keeping the events that come first.
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = &self.session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).map_err(|error| error.to_string())?;
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .and_then(|()| self.commands.flush())
            .map_err(|error| format!("{method}: writing to Chromium: {error}"))?;
        loop {
            let message = self.receive()?;
            if message["id"].as_u64() == Some(id) {
                if let Some(error) = message.get("error") {
                    return Err(format!("{method}: {error}"));
                }
                return Ok(message["result"].clone());
            }
            self.events.push(message);
        }
    }

    /// Waits until the page's `load` event, then until its scripts' next
    /// animation frame and task have run (a page that draws after `load`).
    fn load(&mut self, method: &str, params: Value) -> Result<(), String> {
        let seen = self.events.len();
        self.call(method, params)?;
        if !self.events[seen..].iter().any(|event| event["method"] == "Page.loadEventFired") {
            loop {
                let event = self.receive()?;
                let loaded = event["method"] == "Page.loadEventFired";
                self.events.push(event);
                if loaded {
                    break;
                }
            }
        }
        self.call(
            "Runtime.evaluate",
            json!({
                "expression": "new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)))",
                "awaitPromise": true,
            }),
        )?;
        Ok(())
    }

    /// The viewport, `scale` times its size.
    fn screenshot(&mut self, width: u32, height: u32, scale: f64) -> Result<(Vec<u8>, Image), String> {
        let clip = json!({"x": 0, "y": 0, "width": width, "height": height, "scale": scale});
        let shot = self.call("Page.captureScreenshot", json!({"format": "png", "clip": clip}))?;
        let encoded = shot["data"].as_str().ok_or("Page.captureScreenshot: no data")?;
        let bytes = base64_decode(encoded)?;
        let image = Image::decode(&bytes)?;
        Ok((bytes, image))
    }

    fn render(&mut self, page: &Path, width: u32, height: u32, interact: &str) -> Result<Rendered, String> {
        let page = page.canonicalize().map_err(|error| format!("{}: {error}", page.display()))?;
        let url = format!("file://{}", page.display());
        let target = self.call("Target.createTarget", json!({"url": "about:blank"}))?;
        let attached =
            self.call("Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true}))?;
        self.session =
            Some(attached["sessionId"].as_str().ok_or("Target.attachToTarget: no session")?.to_owned());
        for domain in ["Runtime", "Log", "Page", "Network"] {
            self.call(&format!("{domain}.enable"), json!({}))?;
        }
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        )?;
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": "light"}]}),
        )?;
        let events_before = self.events.len();
        self.load("Page.navigate", json!({"url": url}))?;
        let (light_png, light) = self.screenshot(width, height, 1.0)?;
        let layout = self.evaluate(LAYOUT_PROBE)?;
        self.evaluate(interact)?;
        let dom = self
            .evaluate("document.documentElement.outerHTML")?
            .as_str()
            .ok_or("the page has no document")?
            .to_owned();
        self.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
        )?;
        self.load("Page.reload", json!({"ignoreCache": true}))?;
        // Half size: enough to see the scheme drawn, a quarter of the
        // pixels to decode unoptimized.
        let (dark_png, dark) = self.screenshot(width, height, 0.5)?;
        let (problems, requests) = problems_and_requests(&self.events[events_before..], &url);
        Ok(Rendered { layout, dom, light, dark, light_png, dark_png, problems, requests })
    }

    /// The value of a JavaScript expression, or what it threw.
    fn evaluate(&mut self, expression: &str) -> Result<Value, String> {
        let answer =
            self.call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true}))?;
        if let Some(details) = answer.get("exceptionDetails") {
            return Err(format!("evaluating {expression}: {details}"));
        }
        Ok(answer["result"]["value"].clone())
    }

    fn close(&mut self) {
        // Browser.close goes to the browser, not the page's session.
        self.session = None;
        self.deadline = Instant::now() + Duration::from_secs(5);
        let _ = self.call("Browser.close", json!({}));
        let waited = Instant::now();
        while waited.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The problems among the page's events, and the URLs it requested other
/// than `page` itself.
fn problems_and_requests(events: &[Value], page: &str) -> (Vec<String>, Vec<String>) {
    let mut problems = Vec::new();
    let mut requests = Vec::new();
    for event in events {
        let params = &event["params"];
        match event["method"].as_str().unwrap_or_default() {
            "Runtime.exceptionThrown" => {
                let details = &params["exceptionDetails"];
                let what = details["exception"]["description"].as_str().or(details["text"].as_str());
                problems.push(format!(
                    "uncaught exception at line {}: {}",
                    details["lineNumber"],
                    what.unwrap_or("(no description)")
                ));
            }
            "Runtime.consoleAPICalled" => {
                let kind = params["type"].as_str().unwrap_or_default();
                if matches!(kind, "error" | "warning" | "assert") {
                    let args: Vec<String> = params["args"]
                        .as_array()
                        .map(|args| {
                            args.iter()
                                .map(|arg| {
                                    arg["value"]
                                        .as_str()
                                        .map(str::to_owned)
                                        .or_else(|| arg["description"].as_str().map(str::to_owned))
                                        .unwrap_or_else(|| arg["value"].to_string())
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    problems.push(format!("console.{kind}: {}", args.join(" ")));
                }
            }
            "Log.entryAdded" => {
                let entry = &params["entry"];
                if entry["level"] == "error" {
                    problems.push(format!(
                        "browser {} error: {} {}",
                        entry["source"].as_str().unwrap_or_default(),
                        entry["text"].as_str().unwrap_or_default(),
                        entry["url"].as_str().unwrap_or_default()
                    ));
                }
            }
            "Network.requestWillBeSent" => {
                let url = params["request"]["url"].as_str().unwrap_or_default();
                if url != page && !url.starts_with("data:") && !requests.iter().any(|seen| seen == url) {
                    requests.push(url.to_owned());
                }
            }
            _ => {}
        }
    }
    (problems, requests)
}
