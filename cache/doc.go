// Package cache is tenax's LLM response cache: a directory of entries
// keyed by the hash of everything that determines a response (provider,
// model, messages, parameters), so a rerun or a resumed job answers a
// repeated request from disk instead of paying for it again.
//
// Each entry is a small JSON file, dir/<key[:2]>/<key>.json, written to a
// temporary file and renamed into place, so a reader sees a whole entry or
// none, and several processes can share one directory with no lock and no
// in-memory index. A file that does not parse (a crash on a filesystem
// that lost the write) reads as a miss and is removed.
//
// A cached answer can prove wrong: the heal loop finds it invalid. Reject
// removes such an entry, so the next run regenerates it instead of being
// served the same bad answer forever, and keeps it under dir/rejected/
// with the reason, for whoever wants to know what the model got wrong.
//
// Keys come from Key, the hex SHA-256 of a value's JSON encoding. Only
// such keys are accepted (16 or more lowercase hex digits), which also
// keeps a key from naming a path outside the directory.
package cache
