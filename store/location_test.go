package store

import (
	"strings"
	"testing"
)

func TestParseLocation(t *testing.T) {
	tests := []struct {
		in      string
		want    Location
		wantErr string
	}{
		{in: ".tenax", want: Location{Dir: ".tenax"}},
		{in: "/var/lib/tenax", want: Location{Dir: "/var/lib/tenax"}},
		{in: "  jobs  ", want: Location{Dir: "jobs"}},
		{in: "file:///srv/tenax", want: Location{Dir: "/srv/tenax"}},
		{in: "./odd://name", want: Location{Dir: "./odd://name"}},
		{in: "postgres://u@db:5432/tenax?sslmode=disable", want: Location{PostgresURL: "postgres://u@db:5432/tenax?sslmode=disable"}},
		{in: "postgresql://u:pw@db/tenax", want: Location{PostgresURL: "postgresql://u:pw@db/tenax"}},
		{in: "POSTGRES://u@db/x", want: Location{PostgresURL: "POSTGRES://u@db/x"}},
		{in: "", wantErr: "empty store location"},
		{in: "mysql://u:secret@db/x", wantErr: `unknown store scheme "mysql"`},
		{in: "postgres:///tenax", wantErr: "names no host"},
		{in: "file://", wantErr: "names no directory"},
	}
	for _, tt := range tests {
		got, err := ParseLocation(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseLocation(%q) = %+v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseLocation(%q): the error shows the password: %v", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestLocationStringHidesThePassword(t *testing.T) {
	l := Location{PostgresURL: "postgres://tenax:s3cret@db:5432/jobs?sslmode=disable"}
	if s := l.String(); strings.Contains(s, "s3cret") || !strings.Contains(s, "db:5432/jobs") {
		t.Errorf("String() = %q, want the URL without its password", s)
	}
}

// FuzzParseLocation: whatever the text, ParseLocation sets exactly one
// field or returns an error, and String never shows a password it was given.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{".tenax", "postgres://u:pw@h/db", "file:///x", "x://y", "postgres://%zz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocation(s)
		if err != nil {
			return
		}
		if (l.Dir == "") == (l.PostgresURL == "") {
			t.Fatalf("ParseLocation(%q) = %+v: want exactly one of Dir and PostgresURL", s, l)
		}
		if l.PostgresURL != "" && strings.Contains(s, ":pw@") && strings.Contains(l.String(), ":pw@") {
			t.Fatalf("String() of %q shows the password: %s", s, l)
		}
	})
}

// TestLocationStringHidesAQueryPassword: a ?password= in the store URL was
// printed in errors and in the "Run it with: tenax worker --store …" line.
func TestLocationStringHidesAQueryPassword(t *testing.T) {
	for _, raw := range []string{
		"postgres://tenax@db:5432/jobs?password=s3cret&sslmode=disable",
		"postgres://tenax@db/jobs?PASSWORD=s3cret",
		"postgresql://tenax:s3cret@db/jobs?sslpassword=s3cret",
	} {
		s := Location{PostgresURL: raw}.String()
		if strings.Contains(s, "s3cret") || !strings.Contains(s, "@db") {
			t.Errorf("String() of %s = %q, want the URL without its password", raw, s)
		}
	}
}
