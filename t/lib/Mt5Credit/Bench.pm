package Mt5Credit::Bench;

# What more than one benchmark does: deliveries through ingest_batch() as
# the edge sends them, timed by the database's own clock.

use strict;
use warnings;

use Carp qw(croak);
use Exporter 'import';
use IPC::Open2 qw(open2);
use Mt5Credit::Provider qw(stripe_event);

our @EXPORT_OK = qw(ingest_batches ingest_one_batch psql_session);

sub hexlit { return "'\\x" . unpack('H*', $_[0]) . "'::bytea" }

# One call of ingest_batch() with paid events for @$chunk ({ref, pi,
# amount}), signed at $signed_at.  Returns the seconds the database spent
# in it (psql's start left out) and, with {cpu} (the login needs
# pg_read_server_files and pg_read_file(text)), the seconds its backend was on a CPU
# (/proc/self/schedstat): what other load on the machine changes least.
# {db}: another database of the sandbox.  {session}: a psql_session()
# to send it on, as the edge sends on the connections it keeps (a new
# psql, and so a new backend, each call without).
sub ingest_one_batch {
    my ($sb, $signed_at, $chunk, %opt) = @_;
    my @body = map { stripe_event(type => 'payment_intent.succeeded',
                                  deposit => $_->{ref}, pi => $_->{pi},
                                  id => "evt_$_->{pi}",
                                  amount => $_->{amount}) } @$chunk;
    my $n = @$chunk;
    my $cpu = $opt{cpu} ? "SELECT split_part(pg_read_file("
                          . "'/proc/self/schedstat'), ' ', 1); " : '';
    my $sql = $cpu . "SELECT set_config('bench.t0', "
        . "clock_timestamp()::text, false); "
        . "SELECT count(*) FROM mt5credit.ingest_batch("
        . "array_fill('stripe'::text, ARRAY[$n]), "
        . "array_fill(NULL::text, ARRAY[$n]), ARRAY["
        . join(',', map { hexlit($_) } @body) . "], "
        . "array_fill('stripe'::text, ARRAY[$n]), "
        . "array_fill(${signed_at}::bigint, ARRAY[$n]), "
        . "array_fill(NULL::text, ARRAY[$n])); "
        . "SELECT extract(epoch FROM clock_timestamp() "
        . "- current_setting('bench.t0')::timestamptz); " . $cpu;
    my $r = $opt{session}
        ? $opt{session}->($sql)
        : $sb->psql($sql, user => 'edge', ($opt{db} ? (db => $opt{db}) : ()));
    return $r->[-1][0] unless $opt{cpu};
    return ($r->[-2][0], ($r->[-1][0] - $r->[0][0]) / 1e9);
}

# One psql kept open on {db} as {user} (edge): a function that sends it
# SQL and returns the rows, as Sandbox::psql() does; called with no SQL,
# it ends the session.  What a statement costs in a backend that has
# already planned it, as the edge's pool keeps its connections.
sub psql_session {
    my ($sb, %opt) = @_;
    my @args = $sb->psql_args($opt{user} || 'edge', undef, $opt{db});
    my $pid = open2(my $from, my $to, 'psql', '-X', '-q', '-At', '-v',
                    'ON_ERROR_STOP=1', @args);
    return sub {
        my ($sql) = @_;
        unless (defined $sql) {
            close $to;
            waitpid $pid, 0;
            return;
        }
        croak "psql session: end the last statement with ;: $sql"
            unless $sql =~ /;\s*\z/;
        print {$to} "$sql\n\\echo __end_of_statements__\n";
        $to->flush;
        my @rows;
        while (my $line = <$from>) {
            chomp $line;
            return \@rows if $line eq '__end_of_statements__';
            push @rows, [ split /\|/, $line, -1 ];
        }
        waitpid $pid, 0;
        croak "psql session ended (exit $?) after: "
              . join("\n", map { join '|', @$_ } @rows);
    };
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
