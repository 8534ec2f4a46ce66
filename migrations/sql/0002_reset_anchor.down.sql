ALTER TABLE tb_package_usage DROP COLUMN reset_anchor_day;
