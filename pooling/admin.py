from __future__ import annotations

from django.contrib import admin

from pooling.models import Collection, Document, Job, Run, Topic


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["name", "description", "created_at"]
    search_fields = ["name"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["docid", "title", "collection"]
    list_filter = ["collection"]
    search_fields = ["docid", "title"]
    show_full_result_count = False


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ["qid", "query", "collection", "segments"]
    list_filter = ["collection"]
    search_fields = ["qid", "query"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "num_rows", "num_topics", "created_at"]
    list_filter = ["collection"]
    search_fields = ["name"]
    readonly_fields = ["num_rows", "num_topics", "source_file", "created_at"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "collection", "progress", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    readonly_fields = [f.name for f in Job._meta.fields]
