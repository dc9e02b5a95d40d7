#!/bin/sh
# The README tour's example of a program in the workspace.
echo fixed > FIXED.txt
echo "fixed things"
