package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}

func TestGreet(t *testing.T) {
	for _, name := range []string{"Ann", "Bo"} {
		t.Run(name, func(t *testing.T) {
			if got, want := Greet(name), "Hello, "+name+"!"; got != want {
				t.Errorf("Greet(%q) = %q, want %q", name, got, want)
			}
		})
	}
}

func TestDiv(t *testing.T) {
	if got := Div(1, 0); got != 0 {
		t.Errorf("Div(1, 0) = %d, want 0", got)
	}
}
