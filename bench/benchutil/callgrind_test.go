package benchutil

import "testing"

func TestSumThreadIr(t *testing.T) {
	out := "PID 1: redis-server\nsending command status internal to pid 1\n\n  Totals:        Ir \n   Th 1  23,281,634 \n   Th 2           0 \n   Th 5     720,879 \n"
	got, err := sumThreadIr(out)
	if err != nil || got != 24002513 {
		t.Fatalf("sumThreadIr = %d, %v; want 24002513", got, err)
	}
	if _, err := sumThreadIr("   Th 1  12x4 \n"); err == nil {
		t.Fatal("a count that is not a number is an error")
	}
}
