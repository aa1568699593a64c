// Package workertype holds the values a workers' database reports and
// takes — a worker (Info, Status), where a job run by workers stands
// (Progress, with its shared breaker and budget), the operator's answer
// to its breaker (Decision) and the errors that refuse one — apart from
// package worker, which links River and pgx. It is to worker what
// rivertype is to River: a console (package web, package metrics) reads
// these values through an interface it declares, and links no database
// driver; cmd/tenax hands it a *worker.Client, whose methods return them.
package workertype
