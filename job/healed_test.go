package job

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestHealedSuccessKeepsTrackedErrors is the regression test of succeeded
// records that dropped tracked_errors, so what the heal loop fixed was
// invisible: an item whose first answer failed validation and whose re-ask
// passed records the error it tracked, as fixed.
func TestHealedSuccessKeepsTrackedErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("items.jsonl", "{\"n\": 1}\n", 0o644)
	// The first answer is wrong, the re-ask's right.
	write("answer.sh", "#!/bin/sh\nif [ -e asked ]; then echo ok; else touch asked; echo 'wrong answer'; fi\n", 0o755)
	write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./answer.sh", "{{.n}}"]
  dir: .
validate:
  regex: "^ok"
`, 0o644)
	res, err := Run(context.Background(), filepath.Join(dir, "job.yaml"), Options{Home: filepath.Join(dir, "home")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 1 {
		t.Fatalf("%d succeeded, want the item healed", res.Succeeded)
	}
	f, err := os.Open(filepath.Join(res.Dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		t.Fatal("no record")
	}
	var rec struct {
		HealAttempts  int `json:"heal_attempts"`
		TrackedErrors []struct {
			Fingerprint string `json:"fingerprint"`
			Status      string `json:"status"`
		} `json:"tracked_errors"`
	}
	if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.HealAttempts != 1 || len(rec.TrackedErrors) != 1 || rec.TrackedErrors[0].Status != "fixed" {
		t.Errorf("record %s: want one re-ask and its error tracked as fixed", sc.Bytes())
	}
}
