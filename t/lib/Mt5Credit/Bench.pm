package Mt5Credit::Bench;

# What more than one benchmark does: deliveries through ingest_batch() as
# the edge sends them, timed by the database's own clock.

use strict;
use warnings;

use Exporter 'import';
use Mt5Credit::Provider qw(stripe_event);

our @EXPORT_OK = qw(ingest_batches);

sub hexlit { return "'\\x" . unpack('H*', $_[0]) . "'::bytea" }

# Paid events for @p ({ref, pi, amount}), $batch a call, signed at
# $signed_at: the seconds the database spent in them (psql's start left
# out).
sub ingest_batches {
    my ($sb, $signed_at, $batch, @p) = @_;
    my $secs = 0;
    while (my @chunk = splice(@p, 0, $batch)) {
        my @body = map { stripe_event(type => 'payment_intent.succeeded',
                                      deposit => $_->{ref}, pi => $_->{pi},
                                      id => "evt_$_->{pi}",
                                      amount => $_->{amount}) } @chunk;
        my $n = @chunk;
        my $r = $sb->psql("SELECT set_config('bench.t0', "
            . "clock_timestamp()::text, false); "
            . "SELECT count(*) FROM mt5credit.ingest_batch("
            . "array_fill('stripe'::text, ARRAY[$n]), "
            . "array_fill(NULL::text, ARRAY[$n]), ARRAY["
            . join(',', map { hexlit($_) } @body) . "], "
            . "array_fill('stripe'::text, ARRAY[$n]), "
            . "array_fill(${signed_at}::bigint, ARRAY[$n]), "
            . "array_fill(NULL::text, ARRAY[$n])); "
            . "SELECT extract(epoch FROM clock_timestamp() "
            . "- current_setting('bench.t0')::timestamptz)", user => 'edge');
        $secs += $r->[-1][0];
    }
    return $secs;
}

1;
