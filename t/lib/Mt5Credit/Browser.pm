package Mt5Credit::Browser;

# Headless Chromium (Debian's chromium package) for checking what a page
# shows: the DOM after the page's own scripts ran.

use strict;
use warnings;

our $CHROMIUM = '/usr/bin/chromium';

sub available { -x $CHROMIUM }

# The serialized DOM of a local file, or undef if Chromium failed.  Bounded:
# a page that never settles cannot hang the suite.
sub dump_dom {
    my ($sb, $file) = @_;
    my $profile = $sb->dir . '/chromium-profile';
    my $out = $sb->dir . '/chromium-dom.html';
    my $rc = system("timeout 120 $CHROMIUM --headless --no-sandbox "
        . "--disable-gpu --no-first-run --disable-extensions "
        . "--user-data-dir=$profile --virtual-time-budget=5000 "
        . "--dump-dom file://$file > $out 2> $out.err");
    return undef if $rc != 0;
    open my $fh, '<', $out or return undef;
    local $/;
    return <$fh>;
}

1;
