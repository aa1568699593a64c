package fix_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/spec"
)

// llmSpec is a fix spec whose fixer is the mock provider with scripted
// answers.
func llmSpec(t *testing.T, r *repo, answers ...string) fix.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("check:\n  argv: [./check.sh]\n  parser: gotest\nfixer:\n  type: llm\n  provider: mock\n  max_invalid: 1\n  mock:\n    answers:\n")
	for _, a := range answers {
		b.WriteString("      - |\n")
		for _, line := range strings.Split(strings.TrimRight(a, "\n"), "\n") {
			b.WriteString("        " + line + "\n")
		}
	}
	b.WriteString("budget: {max_error_attempts: 2, max_attempts: 4}\n")
	s, err := spec.ParseFix("fix.yaml", []byte(b.String()), r.dir, nil)
	if err != nil {
		t.Fatalf("spec:\n%s\n%v", b.String(), err)
	}
	cfg, err := fix.FromSpec(s, fix.Options{Home: r.home, NewModel: job.FixModel})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestLLMFixerEditsAreAppliedAndRechecked(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	cfg := llmSpec(t, r,
		// Attempt 1, first answer: quotes text A.txt does not hold.
		"<<<<<<< SEARCH A.txt\nseven\n=======\nok\n>>>>>>> REPLACE\n",
		// Re-asked with feedback: a search/replace that applies.
		"Here is the fix:\n<<<<<<< SEARCH A.txt\n1\n=======\nok\n>>>>>>> REPLACE\n",
		// Attempt 2: a whole file.
		"<<<<<<< FILE B.txt\nok\n>>>>>>> END\n",
	)
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != fix.OutcomePassed || res.Attempts != 2 {
		t.Fatalf("outcome %s after %d attempts (%s); want passed after 2", res.Outcome, res.Attempts, res.Reason)
	}
	if r.read("A.txt") != "ok" || r.read("B.txt") != "ok" {
		t.Errorf("A.txt %q, B.txt %q; want both ok", r.read("A.txt"), r.read("B.txt"))
	}
	atts := attemptsOf(audit(t, res))
	if atts[0].Reasks != 1 || atts[0].Result != heal.ResultFixed || atts[0].PromptHash == "" || atts[0].InputTokens == 0 {
		t.Errorf("attempt 1: %d re-asks, result %q, prompt hash %q, %d input tokens; want 1 re-ask (the edit that did not apply), fixed, a hash and the tokens counted",
			atts[0].Reasks, atts[0].Result, atts[0].PromptHash, atts[0].InputTokens)
	}
	if res.State.Usage.InputTokens == 0 {
		t.Error("the run's usage is 0; the model's tokens are counted")
	}
}

func TestLLMAnswerThatNeverAppliesIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1"})
	cfg := llmSpec(t, r, "I would change A.txt to say ok.")
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	atts := attemptsOf(audit(t, res))
	if len(atts) != 2 {
		t.Fatalf("%d attempts; want 2 (max_error_attempts), each a failure", len(atts))
	}
	for _, a := range atts {
		if !strings.Contains(a.FixerError, "did not apply") || a.Reasks != 1 || len(a.Edit.Files) != 0 {
			t.Errorf("attempt %d: error %q, %d re-asks, files %v; want 'did not apply' after 1 re-ask and no change", a.Attempt, a.FixerError, a.Reasks, a.Edit.Files)
		}
	}
	if r.read("A.txt") != "1" {
		t.Errorf("A.txt changed to %q by answers that never applied", r.read("A.txt"))
	}
}

// --dry-run promises the exact request the fixer would get, but for an
// llm fixer it showed only tenax's JSON request, which the model never
// sees: not the system message, the prompt or the files quoted in it.
func TestDryRunShowsWhatTheModelWouldBeAsked(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1"})
	cfg := llmSpec(t, r, "no edit")
	var out strings.Builder
	if err := fix.DryRun(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"The model would be asked, with the system message:\nYou fix one error at a time",
		"and the prompt:\nThe check `" + cfg.Check.Argv[0] + "` fails. Fix this error (new, attempt 1 on it):\n\nIn TestA:\n    calc_test.go:7: A() = 1, want ok\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dry run lacks %q:\n%s", want, out.String())
		}
	}
}

// TestFromSpecBuildsTheLLMFixerThroughNewModel: fix no longer builds an
// llm.Task itself (task/llm links the providers' SDKs, which the page that
// shows fix runs then linked); the fixer's section goes to NewModel, and
// without one a type llm fixer is refused with what is missing.
func TestFromSpecBuildsTheLLMFixerThroughNewModel(t *testing.T) {
	s, err := spec.ParseFix("fix.yaml", []byte("check: {argv: [sh, -c, exit 1]}\nfixer: {type: llm, provider: mock, model: m1}\n"), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fix.FromSpec(s, fix.Options{}); err == nil || !strings.Contains(err.Error(), "NewModel") {
		t.Errorf("no NewModel: error %v; want one naming fix.Options.NewModel", err)
	}
	var got spec.Fixer
	cfg, err := fix.FromSpec(s, fix.Options{NewModel: func(f spec.Fixer) (fix.Model, error) {
		got = f
		return job.FixModel(f)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Provider != "mock" || got.Model != "m1" {
		t.Errorf("NewModel was given %+v, want the spec's fixer (mock, m1)", got)
	}
	if _, ok := cfg.Fixer.(fix.LLMFixer); !ok {
		t.Errorf("fixer %T, want an LLMFixer", cfg.Fixer)
	}
}
