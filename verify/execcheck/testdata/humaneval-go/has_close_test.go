package humaneval

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHasCloseElements(t *testing.T) {
	assert := assert.New(t)
	assert.Equal(true, HasCloseElements([]float64{1.0, 2.0, 3.9, 4.0, 5.0, 2.2}, 0.3))
	assert.Equal(false, HasCloseElements([]float64{1.0, 2.0, 3.9, 4.0, 5.0, 2.2}, 0.05))
}
