package Mt5Credit::Bench;

# What more than one benchmark does: deliveries through ingest_batch() as
# the edge sends them, timed by the database's own clock.

use strict;
use warnings;

use Exporter 'import';
use Mt5Credit::Provider qw(stripe_event);

our @EXPORT_OK = qw(ingest_batches ingest_one_batch);

sub hexlit { return "'\\x" . unpack('H*', $_[0]) . "'::bytea" }

# One call of ingest_batch() with paid events for @$chunk ({ref, pi,
# amount}), signed at $signed_at.  Returns the seconds the database spent
# in it (psql's start left out) and, with {cpu} (the login needs
# pg_read_server_files and pg_read_file(text)), the seconds its backend was on a CPU
# (/proc/self/schedstat): what other load on the machine changes least.
# {db}: another database of the sandbox.
sub ingest_one_batch {
    my ($sb, $signed_at, $chunk, %opt) = @_;
    my @body = map { stripe_event(type => 'payment_intent.succeeded',
                                  deposit => $_->{ref}, pi => $_->{pi},
                                  id => "evt_$_->{pi}",
                                  amount => $_->{amount}) } @$chunk;
    my $n = @$chunk;
    my $cpu = $opt{cpu} ? "SELECT split_part(pg_read_file("
                          . "'/proc/self/schedstat'), ' ', 1); " : '';
    my $r = $sb->psql($cpu . "SELECT set_config('bench.t0', "
        . "clock_timestamp()::text, false); "
        . "SELECT count(*) FROM mt5credit.ingest_batch("
        . "array_fill('stripe'::text, ARRAY[$n]), "
        . "array_fill(NULL::text, ARRAY[$n]), ARRAY["
        . join(',', map { hexlit($_) } @body) . "], "
        . "array_fill('stripe'::text, ARRAY[$n]), "
        . "array_fill(${signed_at}::bigint, ARRAY[$n]), "
        . "array_fill(NULL::text, ARRAY[$n])); "
        . "SELECT extract(epoch FROM clock_timestamp() "
        . "- current_setting('bench.t0')::timestamptz); " . $cpu,
        user => 'edge', ($opt{db} ? (db => $opt{db}) : ()));
    return $r->[-1][0] unless $opt{cpu};
    return ($r->[-2][0], ($r->[-1][0] - $r->[0][0]) / 1e9);
}

# Paid events for @p, $batch a call: the seconds the database spent in
# them (psql's start left out).
sub ingest_batches {
    my ($sb, $signed_at, $batch, @p) = @_;
    my $secs = 0;
    while (my @chunk = splice(@p, 0, $batch)) {
        $secs += ingest_one_batch($sb, $signed_at, \@chunk);
    }
    return $secs;
}

1;
