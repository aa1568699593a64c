package fixdemo

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}

func TestMax(t *testing.T) {
	if got := Max(2, 7); got != 7 {
		t.Errorf("Max(2, 7) = %d, want 7", got)
	}
}

func TestShout(t *testing.T) {
	if got := Shout("hi"); got != "HI!" {
		t.Errorf("Shout(%q) = %q, want %q", "hi", got, "HI!")
	}
}
