#!/bin/sh
echo "processed $1"
