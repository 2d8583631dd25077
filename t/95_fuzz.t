#!/usr/bin/perl
#
# The libFuzzer targets (t/fuzz/, built by "make fuzz-build" with ASan and
# UBSan), briefly: every regression input, then ten seconds of fuzzing
# each from the checked-in seed corpus.  "make fuzz" runs them longer.
# Impossible (within what the fuzzer reaches):
#   - a crash, an out-of-bounds access or undefined behaviour in the
#     signature header parsers and check of any scheme, the module's body
#     assembly, the MT5 answer readers or the settlement readers
#   - a body that verifies still verifying with one bit changed
#   - the body assembly returning other bytes than the buffers hold
#   - a login read back from an MT5 answer other than the one asked about
#   - a settlement row whose net is not gross - fee, or an error that
#     names no line
#   - a crash once found coming back (t/fuzz/regressions/)

use strict;
use warnings;

use Test::More;

my $seconds = $ENV{MT5CREDIT_FUZZ_SECONDS} || 10;
my $out = `t/fuzz/run $seconds 2>&1`;
my $rc = $? >> 8;

for my $f (qw(fuzz_signature fuzz_body fuzz_mt5_answer fuzz_settlement
               fuzz_adyen)) {
    like($out, qr/^$f: ok, \d+ runs/m, "$f: no crash in ${seconds}s")
        or diag $out;
}
is($rc, 0, 't/fuzz/run exits 0') or diag $out;
note($out);

done_testing;
