package job

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tenaxhq/tenax/store"
)

// Latest is the job reference that means the most recently created job.
const Latest = "latest"

// ResolveID turns what a user typed where a job id goes into the id: the
// id itself, "latest" (or nothing) for the most recent job, or a job's name
// (the spec's name:) for the most recent job of that name. An unknown
// reference is a usage error that says how to list the jobs. A job whose
// manifest cannot be read is an error, the store's
// *store.UnreadableJobsError, for a ref that names it or may mean it: its
// id, "latest" when it is newer than every readable job, a name when it is
// newer than the readable jobs of that name (its own name unknown). An
// older broken job stands in the way of no other.
func ResolveID(ctx context.Context, st store.Store, ref string) (string, error) {
	jobs, err := st.List(ctx)
	var unreadable *store.UnreadableJobsError
	if errors.As(err, &unreadable) {
		if u, ok := unreadable.Find(ref); ok {
			return "", fmt.Errorf("job %s: %w", ref, &store.UnreadableJobsError{Jobs: []store.UnreadableJob{u}})
		}
		if len(jobs) == 0 {
			// Not "no jobs yet": there are jobs, none readable.
			return "", unreadable
		}
		if err := unresolvable(jobs, ref, unreadable); err != nil {
			return "", err
		}
		err = nil
	}
	if err != nil {
		return "", fmt.Errorf("listing the jobs: %w", err)
	}
	if len(jobs) == 0 {
		if ref != "" && ref != Latest {
			// Name what was asked for: a wrong --home or --store is the
			// likelier mistake than a job that never ran.
			return "", usage(fmt.Errorf("no job %q: there are no jobs here yet (another --home or --store?); start one with `tenax run SPEC`", ref))
		}
		return "", usage(errors.New("there are no jobs yet: start one with `tenax run SPEC`"))
	}
	if ref == "" || ref == Latest {
		return jobs[len(jobs)-1].ID, nil
	}
	for _, m := range jobs {
		if m.ID == ref {
			return ref, nil
		}
	}
	// Oldest first: the last of a name is its latest run.
	for i := len(jobs) - 1; i >= 0; i-- {
		if jobs[i].Name == ref {
			return jobs[i].ID, nil
		}
	}
	var names []string
	seen := map[string]bool{}
	for _, m := range jobs {
		if m.Name != "" && !seen[m.Name] {
			seen[m.Name] = true
			names = append(names, m.Name)
		}
	}
	msg := fmt.Sprintf("no job %q: give a job id, %q, or a job's name", ref, Latest)
	if len(names) > 0 {
		msg += " (" + strings.Join(names, ", ") + ")"
	}
	return "", usage(errors.New(msg + "; `tenax status --all` lists the jobs"))
}

// unresolvable is the error of a ref that an unreadable job may be meant
// by: a corrupt newest manifest made "latest" and the job's name mean an
// older job, which export exported and resume re-ran. Job ids are their
// creation time (job_YYYYMMDD_HHMMSS), so an unreadable job's id says
// whether it is newer than the job ref would otherwise mean.
func unresolvable(jobs []store.Manifest, ref string, unreadable *store.UnreadableJobsError) error {
	newest := ""
	for _, m := range jobs {
		if m.ID == ref {
			return nil
		}
		if ref == "" || ref == Latest || m.Name == ref {
			newest = max(newest, m.ID)
		}
	}
	var inTheWay []store.UnreadableJob
	for _, u := range unreadable.Jobs {
		if u.ID > newest {
			inTheWay = append(inTheWay, u)
		}
	}
	if len(inTheWay) == 0 {
		return nil
	}
	what := fmt.Sprintf("%q", ref)
	if ref == "" || ref == Latest {
		what = fmt.Sprintf("%q (the newest job)", Latest)
	}
	return fmt.Errorf("cannot tell which job %s means: %w; repair or remove that job's directory, or name the job by its id (`tenax status --all` lists them)", what, &store.UnreadableJobsError{Jobs: inTheWay})
}
