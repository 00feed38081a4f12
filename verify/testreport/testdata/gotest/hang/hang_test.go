package hang

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestHang(t *testing.T) {
	t.Log("waiting for a reply that never comes")
	time.Sleep(time.Minute)
}
