package segment

import (
	"reflect"
	"testing"
)

// A zero Config gets every DefaultConfig value, and DefaultConfig sets
// every tuning field (nothing is left to a default elsewhere).
func TestZeroConfigTakesDefaultConfig(t *testing.T) {
	c := Config{}.withDefaults()
	d := DefaultConfig()
	cv, dv := reflect.ValueOf(c), reflect.ValueOf(d)
	for i := range cv.NumField() {
		name := cv.Type().Field(i).Name
		switch name {
		case "Clock", "Logger", "Registerer":
			continue
		}
		if dv.Field(i).IsZero() {
			t.Errorf("DefaultConfig leaves %s unset", name)
		}
		if !reflect.DeepEqual(cv.Field(i).Interface(), dv.Field(i).Interface()) {
			t.Errorf("zero %s became %v, DefaultConfig says %v", name, cv.Field(i), dv.Field(i))
		}
	}
}
