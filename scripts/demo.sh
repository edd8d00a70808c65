#!/bin/bash
echo "demo: not written yet"
