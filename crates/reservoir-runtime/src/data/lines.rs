//! The lines of a CSV file: a bound on their length, and their true numbers for messages.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// Longest line a CSV file may have (16 MiB: a hundred thousand numeric columns fit).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// A reader failing with [`io::ErrorKind::InvalidData`] once a line runs past
/// [`MAX_LINE_BYTES`], so a file without line ends (`/dev/zero`) or a runaway header is refused
/// after 16 MiB instead of being buffered whole.
pub struct BoundedLines<R> {
    inner: R,
    /// Bytes of the current line read so far.
    line_bytes: usize,
    /// Line ends read so far.
    line_ends: u64,
}

impl<R> BoundedLines<R> {
    /// Bounds the lines of `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            line_bytes: 0,
            line_ends: 0,
        }
    }
}

impl<R: Read> Read for BoundedLines<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let chunk = &buf[..n];
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                self.line_ends += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
                self.line_bytes = n - last - 1;
            }
            None => self.line_bytes += n,
        }
        if self.line_bytes > MAX_LINE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "line {} is longer than {} MiB (is this a CSV file?)",
                    self.line_ends + 1,
                    MAX_LINE_BYTES >> 20
                ),
            ));
        }
        Ok(n)
    }
}

/// True 1-based line numbers of a CSV file's records. The csv crate's `Position::line` is one
/// short after `\r\n` line ends and after blank lines; its byte offsets are right, so lines are
/// counted here up to a record's offset by a second, forward-only reader of the same file.
/// Where that reader cannot be had (a pipe), the csv crate's line is given.
pub struct LineCounter {
    source: Option<BufReader<File>>,
    offset: u64,
    line_ends: u64,
}

impl LineCounter {
    /// A counter over the file at `path`.
    pub fn open(path: &Path) -> Self {
        let source = File::open(path)
            .ok()
            .filter(|file| file.metadata().is_ok_and(|m| m.is_file()))
            .map(BufReader::new);
        Self {
            source,
            offset: 0,
            line_ends: 0,
        }
    }

    /// The line of the record at `position` (0 when there is none). Positions must come in
    /// file order, as a reader gives them.
    pub fn line(&mut self, position: Option<&csv::Position>) -> u64 {
        let Some(position) = position else {
            return 0;
        };
        match self.advance(position.byte()) {
            Ok(line) => line,
            Err(_) => {
                self.source = None;
                position.line()
            }
        }
    }

    fn advance(&mut self, byte: u64) -> io::Result<u64> {
        let source = self
            .source
            .as_mut()
            .ok_or_else(|| io::Error::other("no second reader"))?;
        if byte < self.offset {
            return Err(io::Error::other("positions out of order"));
        }
        while self.offset < byte {
            let buffer = source.fill_buf()?;
            if buffer.is_empty() {
                break;
            }
            let take = buffer
                .len()
                .min(usize::try_from(byte - self.offset).unwrap_or(usize::MAX));
            self.line_ends += buffer[..take].iter().filter(|&&b| b == b'\n').count() as u64;
            source.consume(take);
            self.offset += take as u64;
        }
        // A record's offset can sit on the line end before it (after `\r`) or on blank lines
        // it skipped: its first byte is after them.
        loop {
            match source.fill_buf()?.first() {
                Some(b'\n') => self.line_ends += 1,
                Some(b'\r') => {}
                _ => break,
            }
            source.consume(1);
            self.offset += 1;
        }
        Ok(self.line_ends + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &str) -> Vec<u64> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("lines.csv");
        std::fs::write(&path, text).expect("write");
        let mut counter = LineCounter::open(&path);
        let mut reader = csv::Reader::from_path(&path).expect("open");
        let mut record = csv::StringRecord::new();
        let mut lines = Vec::new();
        while reader.read_record(&mut record).expect("record") {
            lines.push(counter.line(record.position()));
        }
        lines
    }

    #[test]
    fn records_are_numbered_by_their_line_whatever_the_line_ends() {
        assert_eq!(lines_of("a,b\n1,2\n3,4\n"), [2, 3]);
        assert_eq!(lines_of("a,b\r\n1,2\r\n3,4\r\n"), [2, 3]);
        assert_eq!(lines_of("a,b\n1,2\n\n\n5,6"), [2, 5]);
        assert_eq!(lines_of("a,b\r\n\r\n1,2\r\n\r\n5,6\r\n"), [3, 5]);
        assert_eq!(lines_of("a,b\n\"x\ny\",2\n7,8\n"), [2, 4]);
    }

    #[test]
    fn a_line_past_the_bound_is_an_error_naming_it() {
        let mut text = b"a,b\n1,2\n".to_vec();
        text.resize(text.len() + MAX_LINE_BYTES + 1, b'7');
        let mut reader = BoundedLines::new(text.as_slice());
        let error = io::copy(&mut reader, &mut io::sink()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(
            error
                .to_string()
                .starts_with("line 3 is longer than 16 MiB"),
            "{error}"
        );
        let fits = b"a,b\n1,2\n".repeat(1000);
        assert!(io::copy(&mut BoundedLines::new(fits.as_slice()), &mut io::sink()).is_ok());
    }
}
