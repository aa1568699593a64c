package main

import (
	"context"

	"github.com/tenaxhq/tenax/job"
)

// dryRun checks the spec and the input and shows what the first item's call
// would be, without calling anything or creating a job.
func dryRun(ctx context.Context, g *globals, specPath string, f runFlags) error {
	return job.DryRun(ctx, specPath, job.Options{Home: g.homeDir(), Input: f.input, AllowEmpty: f.allowEmpty}, g.stdout)
}
