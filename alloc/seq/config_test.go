package seq

import (
	"reflect"
	"testing"
)

// A zero Config gets every DefaultConfig duration.
func TestZeroConfigTakesDefaultConfig(t *testing.T) {
	c := Config{}.withDefaults()
	d := DefaultConfig()
	cv, dv := reflect.ValueOf(c), reflect.ValueOf(d)
	for i := range cv.NumField() {
		f := cv.Type().Field(i)
		if f.Type != reflect.TypeFor[int64]() && f.Type.Name() != "Duration" {
			continue
		}
		if dv.Field(i).IsZero() || cv.Field(i).Interface() != dv.Field(i).Interface() {
			t.Errorf("%s: zero became %v, DefaultConfig says %v", f.Name, cv.Field(i), dv.Field(i))
		}
	}
	if c.HTTPClient == nil || c.Clock == nil || c.Logger == nil {
		t.Errorf("unset: %+v", c)
	}
}
