package sample

import "testing"

func TestMean(t *testing.T) {
	if got := Mean([]float64{1, 2, 3, 6}); got != 3 {
		t.Fatalf("Mean = %v, want 3", got)
	}
}
