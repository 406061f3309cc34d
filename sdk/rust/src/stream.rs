//! Readers of the API's streams: NDJSON lines and server-sent events.

use std::io::{BufRead, BufReader, Read};

use serde::de::DeserializeOwned;

use crate::error::{Error, Result, CODE_BAD_RESPONSE, CODE_CONNECTION};

/// The JSON lines of a streamed answer, one item each, until it ends.
pub struct Ndjson<T> {
    reader: BufReader<Box<dyn Read + Send + Sync>>,
    _t: std::marker::PhantomData<T>,
}

impl<T> Ndjson<T> {
    pub(crate) fn new(r: Box<dyn Read + Send + Sync>) -> Self {
        Ndjson { reader: BufReader::new(r), _t: std::marker::PhantomData }
    }
}

impl<T: DeserializeOwned> Iterator for Ndjson<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return None,
                Ok(_) if line.trim().is_empty() => continue,
                Ok(_) => {
                    return Some(serde_json::from_str(line.trim_end()).map_err(|e| Error::new(CODE_BAD_RESPONSE, format!("a stream line is not JSON: {}", e), "")));
                }
                Err(e) => return Some(Err(Error::new(CODE_CONNECTION, format!("read the stream: {}", e), ""))),
            }
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub data: String,
}

/// The events of a server-sent event stream; comments (keep-alives) are skipped.
pub struct Sse {
    reader: BufReader<Box<dyn Read + Send + Sync>>,
}

impl Sse {
    pub(crate) fn new(r: Box<dyn Read + Send + Sync>) -> Self {
        Sse { reader: BufReader::new(r) }
    }
}

impl Iterator for Sse {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut id = None;
        let mut data: Vec<String> = Vec::new();
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(Error::new(CODE_CONNECTION, format!("read the stream: {}", e), ""))),
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return Some(Ok(Event { id, data: data.join("\n") }));
                }
                id = None;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.find(':') {
                Some(i) => (&line[..i], line[i + 1..].strip_prefix(' ').unwrap_or(&line[i + 1..])),
                None => (line, ""),
            };
            match field {
                "id" => id = Some(value.to_string()),
                "data" => data.push(value.to_string()),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events() {
        let text = ": keep-alive\n\nid: 1\ndata: {\"a\":1}\n\nid: 2\ndata: x\ndata: y\n\n";
        let got: Vec<Event> = Sse::new(Box::new(std::io::Cursor::new(text.as_bytes().to_vec()))).map(|e| e.unwrap()).collect();
        assert_eq!(got, vec![Event { id: Some("1".into()), data: "{\"a\":1}".into() }, Event { id: Some("2".into()), data: "x\ny".into() }]);
    }

    #[test]
    fn ndjson_lines() {
        let text = "{\"type\":\"stdout\",\"data\":\"2\\n\"}\n\n{\"type\":\"exit\",\"exit_code\":0}\n";
        let got: Vec<serde_json::Value> = Ndjson::new(Box::new(std::io::Cursor::new(text.as_bytes().to_vec()))).map(|e| e.unwrap()).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1]["exit_code"], 0);
    }
}
