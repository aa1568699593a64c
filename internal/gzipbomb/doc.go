// Package gzipbomb writes gzip streams that are small on the wire and
// huge once inflated, for tests and measurements of how tenax bounds the
// answers it reads: a 2 GiB answer costs about 2 MB to send and a few
// milliseconds of CPU per MiB to write, since the compressed block of a
// run of one byte is made once and sent again and again.
package gzipbomb
