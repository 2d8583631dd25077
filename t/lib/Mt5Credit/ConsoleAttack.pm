package Mt5Credit::ConsoleAttack;

# The console's endpoints and their arguments, and SQL to put in every one
# of them (issue 29): what t/68, t/69 and t/75 send to prove that no byte
# of a request becomes SQL text.

use strict;
use warnings;

use Exporter qw(import);
our @EXPORT_OK = qw(console_args console_sql console_attacks uri_escape);

# every reading endpoint and the arguments it takes
sub console_args {
    return (
        cases => [ qw(kind status age severity owner) ],
        case => [ 'id' ],
        events => [ qw(provider type disposition deposit request_id) ],
        event => [ 'id' ],
        withdrawals => [ 'status' ],
        withdrawal => [ 'ref' ],
        search => [ 'q' ],
        recon_runs => [ 'provider' ],
        recon_run => [ 'id' ],
        recon_report => [ 'id' ],
    );
}

# issue 29's reproduction for a case, then other shapes of SQL: a quote
# closing a literal, a tautology, a dollar quote, a COMMIT
sub console_sql {
    my ($case) = @_;
    my $issue = "SET/**/LOCAL/**/ROLE/**/ann;SELECT/**/mt5credit.console_act("
              . "'{\"action\":\"propose\",\"case\":$case,\"proposal_action\":"
              . "\"requeue_credit\",\"note\":\"x\"}');SET/**/LOCAL/**/ROLE/**/ben";
    return ($issue, "1'; DROP TABLE mt5credit.case; --", '1 OR 1=1',
            "x\$\$; SELECT 1; --", '1;COMMIT;SELECT pg_sleep(1)');
}

sub uri_escape {
    my ($s) = @_;
    $s =~ s/([^A-Za-z0-9_.~-])/sprintf('%%%02X', ord $1)/ge;
    return $s;
}

# [ path under api/, what it is ]: every argument of every endpoint with
# each SQL percent-encoded, and the reproduction raw in the request line
# (nginx takes ' " { } : , ; * there: on 2645cbf that moved money)
sub console_attacks {
    my ($case) = @_;
    my %args = console_args();
    my @sql = console_sql($case);
    my @out;
    for my $endpoint (sort keys %args) {
        for my $arg (@{ $args{$endpoint} }) {
            push @out, map { [ "$endpoint?$arg=" . uri_escape($_),
                               "$endpoint: SQL in $arg" ] } @sql;
            push @out, [ "$endpoint?$arg=$sql[0]",
                         "$endpoint: the reproduction, raw, in $arg" ];
        }
    }
    return @out;
}

1;
