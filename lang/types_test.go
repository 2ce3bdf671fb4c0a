package lang

import (
	"reflect"
	"testing"
)

// TestInternType checks that a type differing from a common one in any
// single field is kept as it is, not replaced by the common type: a field
// added to Type must be compared by identicalScalar.
func TestInternType(t *testing.T) {
	for _, common := range commonTypes {
		if got := internType(common); !reflect.DeepEqual(*got, common) {
			t.Errorf("internType(%v) = %v", common, *got)
		}
		rt := reflect.TypeOf(common)
		for i := range rt.NumField() {
			changed := common
			f := reflect.ValueOf(&changed).Elem().Field(i)
			switch f.Kind() {
			case reflect.Int:
				f.SetInt(f.Int() + 1)
			case reflect.Bool:
				f.SetBool(!f.Bool())
			case reflect.String:
				f.SetString(f.String() + "x")
			case reflect.Pointer:
				f.Set(reflect.New(f.Type().Elem()))
			case reflect.Slice:
				f.Set(reflect.MakeSlice(f.Type(), 1, 1))
			default:
				t.Fatalf("field %s: kind %v not covered by this test", rt.Field(i).Name, f.Kind())
			}
			if got := internType(changed); !reflect.DeepEqual(*got, changed) {
				t.Errorf("%v with %s changed: internType gave %v", common, rt.Field(i).Name, *got)
			}
		}
	}
}
