#!/bin/sh
exec /server "$@"
