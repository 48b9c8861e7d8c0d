package snowflake

import (
	"testing"
	"time"
)

// A zero Config gets every DefaultConfig value.
func TestZeroConfigTakesDefaultConfig(t *testing.T) {
	c, d := Config{}.withDefaults(), DefaultConfig()
	for _, f := range []struct {
		name      string
		got, want time.Duration
	}{
		{"RenewInterval", c.RenewInterval, d.RenewInterval},
		{"FenceMargin", c.FenceMargin, d.FenceMargin},
		{"MaxClockOffset", c.MaxClockOffset, d.MaxClockOffset},
		{"MaxBackwardWait", c.MaxBackwardWait, d.MaxBackwardWait},
		{"RegisterBackoff", c.RegisterBackoff, d.RegisterBackoff},
	} {
		if f.got != f.want || f.want <= 0 {
			t.Errorf("%s: zero became %v, DefaultConfig says %v", f.name, f.got, f.want)
		}
	}
	if c.Clock == nil || c.Logger == nil {
		t.Errorf("unset: %+v", c)
	}
}
