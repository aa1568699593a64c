// Package input streams the work items of a job from a .jsonl, .csv or
// .txt file, one at a time, so that a ten-million-line input costs no more
// memory than its longest line.
//
// Every item gets idx = its 0-based position among the items of the file,
// and that numbering is what the store's records and resume rely on, so it
// must never shift between runs:
//
//   - JSONL (.jsonl, .ndjson): one JSON object per line. Item.Fields is the
//     object, decoded with json.Number for numbers so that integers keep
//     their exact text when a template renders them.
//   - CSV (.csv): the first record is the header; every later record is an
//     item whose Fields map each header name to the string in that column.
//     A quoted field may contain newlines, so a record may span several
//     physical lines; errors name the line where the record starts.
//   - TXT (.txt): every line is an item {"text": line}.
//
// Blank (whitespace-only) lines are skipped and take no idx, so a trailing
// empty line or a paragraph break never becomes an item. A UTF-8 byte order
// mark at the start of the file is ignored, and CRLF line ends read like LF.
//
// A line that cannot be an item — invalid JSON, a JSON value that is not an
// object, invalid UTF-8, a CSV record with the wrong number of fields, a
// line over MaxLineBytes — is a bad line. It still takes an idx, so the idx
// space is the same whatever the caller does with it: Reader.Next returns
// the Item (Fields nil, Raw the line's text as a JSON string) together with
// a *LineError naming the file and the physical line. The caller decides:
// refuse to start (input.on_bad_line: fail) or record the item as failed
// (on_bad_line: record). Scan makes that decision possible before a run: one
// streaming pass that counts items, hashes the file and collects the first
// bad lines.
package input
