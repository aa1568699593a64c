module github.com/tenaxhq/tenax/bench

go 1.26.0

require (
	github.com/avast/retry-go/v5 v5.1.1
	github.com/cenkalti/backoff/v5 v5.0.3
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/tenaxhq/tenax v0.0.0
)

require github.com/bits-and-blooms/bitset v1.24.4 // indirect

replace github.com/tenaxhq/tenax => ../
