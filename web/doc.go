// Package web is tenax's live view of a run and its Prometheus metrics.
//
// A Monitor follows a run through the engine's events (engine.Config.OnEvent,
// job.Options.OnEvent): it keeps, in bounded memory, what only events tell —
// the finishing rate, 429s, cooldowns, the latest items and every recent
// item's timeline (each failed call and why, each invalid answer with the
// feedback its re-ask sent, the outcome) — and it counts the run's metrics
// on a Prometheus registry of the caller's (never the global one). Its
// Prompter turns a tripped breaker or a check-in into a question on the
// page; Race lets the page and a terminal ask at once, the first answer
// winning.
//
// A Server renders the pages with html/template on the server and pushes
// the parts that change as Server-Sent Events; the page's few lines of
// JavaScript swap them in, and without JavaScript it still works, only not
// live. Everything durable (counts by outcome, error groups by
// fingerprint with their sample items and matching hints, tokens, cost
// against the budget) is read through store.Store with report.BuildReport,
// as `tenax status` reads it: `tenax ui` watches any job, written by one
// process or many, and a job's big checkpoint is re-read less often.
//
// Fix runs (Config.FixHome) are read from their directories as well: the
// list beside the jobs, and each run's errors by status, the error being
// worked on and every attempt's patch, check output and verdict, with the
// operator's levers (skip, put first, add context), which queue a
// fix.Instruction that the loop heeds before its next attempt.
//
// Security: without a token only requests naming a loopback host are
// served (DNS rebinding cannot reach the page); Listen on any other address
// requires a token (?token= once, then an HttpOnly SameSite=Strict cookie,
// or Authorization: Bearer for scrapers). Config.ViewToken adds a read-only
// role (Viewer): every page and chart, no action, its POSTs refused. Answers
// are POSTs refused when a
// browser says they come from another site (http.CrossOriginProtection)
// and carrying a per-server form secret.
package web
